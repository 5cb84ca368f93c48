package eventdata

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/jobhooks/jobhooks"
)

func runData(status string, code int) webhooks.RunData {
	d := webhooks.RunData{JobID: "874512", JobName: "Hourly marts refresh (prod)", RunID: "98231477",
		EnvironmentID: "21045", EnvironmentName: "Prod - Snowflake", ToolVersion: "1.8.4",
		ProjectName: "acme-analytics-core", ProjectID: "11201", RunStatus: status, RunStatusCode: code,
		RunStatusMessage: status, RunReason: "Triggered via API", RunStartedAt: "2026-11-30T07:00:04Z"}
	switch status {
	case "Success":
		d.RunFinishedAt = "2026-11-30T07:03:51Z"
	case "Errored":
		d.RunErroredAt = "2026-11-30T07:03:51Z"
		d.RunStatusMessage = "Database Error in model stg_orders\n  Object 'RAW.SHOP.ORDERS' does not exist."
	}
	return d
}

func TestMarshalUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		name string
		data webhooks.RunData
		// share: what is kept is at most this share of the data's JSON.
		share float64
	}{
		{"started", runData("Running", 3), 0.5},
		{"completed", runData("Success", 10), 0.5},
		{"errored", runData("Errored", 20), 0.6},
		// The benches' data (internal/topology): short values, so the
		// names were most of its JSON.
		{"the benches' event", webhooks.RunData{JobID: "42", JobName: "Nightly", RunID: "1234567", EnvironmentID: "7",
			EnvironmentName: "Production", ToolVersion: "1.9.0", ProjectName: "Analytics", ProjectID: "3",
			RunStatus: "Success", RunStatusCode: 10, RunStatusMessage: "None", RunReason: "scheduled",
			RunStartedAt: "2026-01-01T00:00:00Z", RunFinishedAt: "2026-01-01T00:05:00Z"}, 0.4},
		{"empty", webhooks.RunData{}, 0.01},
		{"negative code, text that is not ASCII", webhooks.RunData{RunStatusCode: -7, JobName: "nightly 😀 \uFFFD",
			RunStatusMessage: strings.Repeat("x", 300)}, 0.95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept := Marshal(tc.data)
			js, _ := json.Marshal(tc.data)
			if got := float64(len(kept)) / float64(len(js)); got > tc.share {
				t.Errorf("kept %d bytes for %d of JSON (%.2f), want at most %.2f of them", len(kept), len(js), got, tc.share)
			}
			t.Logf("%d bytes of JSON kept in %d", len(js), len(kept))
			back, err := Unmarshal(kept)
			if err != nil || back != tc.data {
				t.Fatalf("Unmarshal = %+v, %v; want %+v", back, err, tc.data)
			}
		})
	}
}

// TestMarshal_EveryMember: a member of webhooks.RunData that Marshal did
// not keep would come back empty; each string member set alone, and the
// code, must survive.
func TestMarshal_EveryMember(t *testing.T) {
	typ := reflect.TypeOf(webhooks.RunData{})
	for i := range typ.NumField() {
		var d webhooks.RunData
		f := reflect.ValueOf(&d).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("v")
		case reflect.Int:
			f.SetInt(20)
		default:
			t.Fatalf("member %s is a %s: teach eventdata to keep it", typ.Field(i).Name, f.Kind())
		}
		if back, err := Unmarshal(Marshal(d)); err != nil || back != d {
			t.Errorf("member %s: Unmarshal = %+v, %v; want %+v", typ.Field(i).Name, back, err, d)
		}
	}
}

// TestUnmarshal_SkipsLaterMembers: a process of the previous release reads
// what the next one writes, members it does not know skipped.
func TestUnmarshal_SkipsLaterMembers(t *testing.T) {
	want := runData("Success", 10)
	kept := Marshal(want)
	kept = protowire.AppendString(protowire.AppendTag(kept, 40, protowire.BytesType), "later")
	kept = protowire.AppendVarint(protowire.AppendTag(kept, 41, protowire.VarintType), 7)
	if back, err := Unmarshal(kept); err != nil || back != want {
		t.Fatalf("Unmarshal = %+v, %v; want %+v", back, err, want)
	}
}

func TestUnmarshal_RefusesDamage(t *testing.T) {
	kept := Marshal(runData("Success", 10))
	for _, tc := range []struct {
		name string
		kept []byte
	}{
		{"empty", nil},
		{"JSON", []byte(`{"jobId":"1"}`)},
		{"unknown version", append([]byte{0x02}, kept[1:]...)},
		{"cut short", kept[:len(kept)-3]},
		{"a string's length past the end", []byte{version1, 0x0a, 0x7f, 'a'}},
		{"a bad tag", []byte{version1, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := Unmarshal(tc.kept); err == nil {
				t.Fatalf("Unmarshal = %+v, want an error", got)
			}
		})
	}
}

func BenchmarkMarshal(b *testing.B) {
	d := runData("Success", 10)
	b.ReportAllocs()
	for b.Loop() {
		Marshal(d)
	}
}

// BenchmarkUnmarshal against BenchmarkUnmarshalJSON: what reading an
// event's data costs a delivery's body against the JSON it replaced.
func BenchmarkUnmarshal(b *testing.B) {
	kept := Marshal(runData("Success", 10))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(kept); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalJSON(b *testing.B) {
	js, _ := json.Marshal(runData("Success", 10))
	b.ReportAllocs()
	for b.Loop() {
		var d webhooks.RunData
		if err := json.Unmarshal(js, &d); err != nil {
			b.Fatal(err)
		}
	}
}

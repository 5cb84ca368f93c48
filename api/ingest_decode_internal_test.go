package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// decodeWith runs decode over body as the handler would, behind the body
// limit.
func decodeWith[T any](body string, decode func(*gin.Context, *T) error) (T, error) {
	gin.SetMode(gin.ReleaseMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	c.Request.Body = http.MaxBytesReader(w, c.Request.Body, MaxBodyBytes)
	var req T
	err := decode(c, &req)
	return req, err
}

// sameRequest says how two decoded requests differ, or "".
func sameRequest(a, b ingestRequest) string {
	switch {
	case !bytes.Equal(a.AccountID, b.AccountID):
		return fmt.Sprintf("accountId %q against %q", a.AccountID, b.AccountID)
	case a.EventType != b.EventType:
		return fmt.Sprintf("eventType %q against %q", a.EventType, b.EventType)
	case !bytes.Equal(a.EventID, b.EventID):
		return fmt.Sprintf("eventId %q against %q", a.EventID, b.EventID)
	case (a.Data.members == nil) != (b.Data.members == nil) ||
		!maps.EqualFunc(a.Data.members, b.Data.members, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) }):
		return fmt.Sprintf("data %q against %q", a.Data.members, b.Data.members)
	case fmt.Sprint(a.Data.fault) != fmt.Sprint(b.Data.fault):
		return fmt.Sprintf("data fault %v against %v", a.Data.fault, b.Data.fault)
	}
	return ""
}

// TestDecodeIngestRequest_ReadsAsDecodeJSONDoes: every body, the plain
// ones read in one pass and all others, decodes to what decodeJSON with
// ignoreUnknown gives (the same members, the same error), and the plain
// event bodies producers send do take the one pass.
func TestDecodeIngestRequest_ReadsAsDecodeJSONDoes(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		fast bool // read by readIngestRequest
	}{
		{"the sample", sampleIngestBody, true},
		{"spaced out", " {\n \"accountId\" : \"12\" ,\t\"eventType\":\"job.run.started\", \"data\" : { \"jobId\" : 7 , \"runId\":null } }\n", true},
		{"empty data", `{"accountId":1,"eventType":"job.run.started","data":{}}`, true},
		{"null data and type", `{"accountId":1,"eventType":null,"data":null}`, true},
		{"unknown and case-variant members dropped", `{"EventType":"x","accountId":1,"extra":{"a":[1,{"b":"}"}]},"eventType":"job.run.errored","data":{"x":[1,2]}}`, true},
		{"nested data values kept as sent", `{"accountId":1,"eventType":"job.run.completed","data":{"a":{"b":[true,false,null]},"c":-1.5e3,"d":"q\"uote"}}`, true},
		{"escaped event type", `{"accountId":1,"eventType":"job.run.\u0073tarted","data":{}}`, true},
		{"data text fault", `{"accountId":1,"eventType":"job.run.started","data":{"jobName":"a\u0000b"}}`, true},
		{"data invalid UTF-8", "{\"accountId\":1,\"eventType\":\"job.run.started\",\"data\":{\"jobName\":\"a\xffb\"}}", true},
		{"repeated data member", `{"accountId":1,"data":{"a":1},"data":{"b":2}}`, false},
		{"repeated account", `{"accountId":1,"accountId":2,"data":{}}`, false},
		{"escaped name", `{"account\u0049d":1,"data":{}}`, false},
		{"escaped data member name", `{"accountId":1,"data":{"job\u0049d":"7"}}`, false},
		{"event type a number", `{"accountId":1,"eventType":5,"data":{}}`, false},
		{"data a string", `{"accountId":1,"eventType":"job.run.started","data":"x"}`, false},
		{"data an array", `{"accountId":1,"data":[1]}`, false},
		{"not JSON", `{`, false},
		{"empty", ``, false},
		{"null", `null`, false},
		{"an array", `[]`, false},
		{"two objects", `{} {}`, false},
		{"trailing garbage", `{"accountId":1} x`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readsAsDecodeJSONDoes(t, tc.body, tc.fast, readIngestRequest, decodeIngestRequest, sameRequest)
		})
	}
}

// TestDecodeIngestRequest_ABodyOverTheLimit is refused as decodeJSON
// refuses it.
func TestDecodeIngestRequest_ABodyOverTheLimit(t *testing.T) {
	body := `{"accountId":1,"data":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`
	_, err := decodeWith(body, decodeIngestRequest)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("error %v, want the body refused as too large", err)
	}
}

// TestDecodeIngestBatch_ReadsAsDecodeJSONDoes: every batch body, those
// read in one pass and all others, decodes to what decodeJSON with
// ignoreUnknown gives (the same events, the same error), and a batch of
// plain events takes the one pass.
func TestDecodeIngestBatch_ReadsAsDecodeJSONDoes(t *testing.T) {
	plain := `{"accountId":1,"eventType":"job.run.started","eventId":"e1","data":{"jobId":"7"}}`
	for _, tc := range []struct {
		name string
		body string
		fast bool // read by readIngestBatch
	}{
		{"three plain events", `{"events":[` + sampleIngestBody + `,` + plain + `,` + sampleIngestBody + `]}`, true},
		{"spaced out", " {\n \"events\" : [ " + plain + " ,\n\t" + plain + " ] }\n", true},
		{"no events", `{"events":[]}`, true},
		{"events null", `{"events":null}`, true},
		{"no events member", `{}`, true},
		{"unknown members dropped, at the top and in events", `{"Events":[{"a":1}],"x":[1,"]"],"events":[{"EventId":"E","accountId":1,"extra":{"y":"}"},"data":{}}]}`, true},
		{"an event's data text fault", `{"events":[{"accountId":1,"data":{"jobName":"a\u0000b"}}]}`, true},
		{"events twice", `{"events":[` + plain + `],"events":[]}`, false},
		{"an event's member twice", `{"events":[{"accountId":1,"accountId":2,"data":{}}]}`, false},
		{"an escaped member name", `{"events":[{"account\u0049d":1,"data":{}}]}`, false},
		{"an escaped top-level name", `{"event\u0073":[]}`, false},
		{"a null event", `{"events":[null,` + plain + `]}`, false},
		{"an event a number", `{"events":[1]}`, false},
		{"an event's data a string", `{"events":[{"accountId":1,"data":"x"}]}`, false},
		{"an event's type a number", `{"events":[{"accountId":1,"eventType":5,"data":{}}]}`, false},
		{"events an object", `{"events":{"a":1}}`, false},
		{"events a string", `{"events":"x"}`, false},
		{"not JSON", `{"events":[`, false},
		{"an array", `[` + plain + `]`, false},
		{"trailing garbage", `{"events":[]} x`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readsAsDecodeJSONDoes(t, tc.body, tc.fast, readIngestBatch, decodeIngestBatch, sameBatch)
		})
	}
}

// sameBatch says how two decoded batches differ, or "".
func sameBatch(a, b ingestBatchRequest) string {
	if (a.Events == nil) != (b.Events == nil) || len(a.Events) != len(b.Events) {
		return fmt.Sprintf("%d events (nil %v) against %d (nil %v)", len(a.Events), a.Events == nil, len(b.Events), b.Events == nil)
	}
	for i := range a.Events {
		if diff := sameRequest(a.Events[i], b.Events[i]); diff != "" {
			return fmt.Sprintf("event %d: %s", i, diff)
		}
	}
	return ""
}

// readsAsDecodeJSONDoes checks that read takes body in one pass or not as
// fast says, and that decode gives what decodeJSON with ignoreUnknown
// gives: the same error, or a request same finds no difference in.
func readsAsDecodeJSONDoes[T any](t *testing.T, body string, fast bool, read func([]byte, *T) bool,
	decode func(*gin.Context, *T) error, same func(a, b T) string) {
	t.Helper()
	var onePass T
	if got := read([]byte(body), &onePass); got != fast {
		t.Errorf("read in one pass: %v, want %v", got, fast)
	}
	want, wantErr := decodeWith(body, func(c *gin.Context, r *T) error { return decodeJSON(c, r, ignoreUnknown) })
	got, gotErr := decodeWith(body, decode)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("error %v, decodeJSON's %v", gotErr, wantErr)
	}
	if diff := same(got, want); wantErr == nil && diff != "" {
		t.Errorf("decoded %s", diff)
	}
}

// TestDecodeIngestBatch_ABodyOverTheLimit is refused as decodeJSON
// refuses it.
func TestDecodeIngestBatch_ABodyOverTheLimit(t *testing.T) {
	body := `{"events":[{"accountId":1,"data":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}]}`
	_, err := decodeWith(body, decodeIngestBatch)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("error %v, want the body refused as too large", err)
	}
}

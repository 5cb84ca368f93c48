// Package eventdata is how an event's run data (webhooks.RunData, spec
// 2.2's data) is kept in webhook_events.data: a version byte, then each
// member that is not empty as a protocol buffers field (its number below,
// a string as its bytes, the status code as a zigzag varint), written
// with protowire. No member names are stored, so an event keeps a third
// to a half of its JSON's bytes, and readers get the struct without
// parsing JSON.
//
// Field numbers are never reused or renumbered; a new member gets a new
// number, and readers skip numbers they do not know, so a process of the
// previous release reads what the next one writes.
package eventdata

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/jobhooks/jobhooks"
)

// version1 starts every value this package writes.
const version1 = 0x01

// The status code's field number; the strings' are their index in
// stringMembers.
const fieldRunStatusCode protowire.Number = 10

// stringMembers are the string members by field number (0 and the status
// code's number are not strings).
var stringMembers = [...]func(*webhooks.RunData) *string{
	1:  func(d *webhooks.RunData) *string { return &d.JobID },
	2:  func(d *webhooks.RunData) *string { return &d.JobName },
	3:  func(d *webhooks.RunData) *string { return &d.RunID },
	4:  func(d *webhooks.RunData) *string { return &d.EnvironmentID },
	5:  func(d *webhooks.RunData) *string { return &d.EnvironmentName },
	6:  func(d *webhooks.RunData) *string { return &d.ToolVersion },
	7:  func(d *webhooks.RunData) *string { return &d.ProjectName },
	8:  func(d *webhooks.RunData) *string { return &d.ProjectID },
	9:  func(d *webhooks.RunData) *string { return &d.RunStatus },
	11: func(d *webhooks.RunData) *string { return &d.RunStatusMessage },
	12: func(d *webhooks.RunData) *string { return &d.RunReason },
	13: func(d *webhooks.RunData) *string { return &d.RunStartedAt },
	14: func(d *webhooks.RunData) *string { return &d.RunFinishedAt },
	15: func(d *webhooks.RunData) *string { return &d.RunErroredAt },
}

// Marshal returns d as it is kept, the members in field order.
func Marshal(d webhooks.RunData) []byte {
	size := 1 + protowire.SizeTag(fieldRunStatusCode) + protowire.SizeVarint(protowire.EncodeZigZag(int64(d.RunStatusCode)))
	for n, member := range stringMembers {
		if member != nil {
			size += protowire.SizeTag(protowire.Number(n)) + protowire.SizeBytes(len(*member(&d)))
		}
	}
	b := append(make([]byte, 0, size), version1)
	for n, member := range stringMembers {
		switch {
		case protowire.Number(n) == fieldRunStatusCode && d.RunStatusCode != 0:
			b = protowire.AppendTag(b, fieldRunStatusCode, protowire.VarintType)
			b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(d.RunStatusCode)))
		case member != nil:
			b = appendString(b, protowire.Number(n), *member(&d))
		}
	}
	return b
}

func appendString(b []byte, n protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
}

// Unmarshal reads a value Marshal wrote.
func Unmarshal(kept []byte) (webhooks.RunData, error) {
	var d webhooks.RunData
	if len(kept) == 0 || kept[0] != version1 {
		return d, errors.New("event data: not a kept value of a known version")
	}
	for b := kept[1:]; len(b) > 0; {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return d, fmt.Errorf("event data: %w", protowire.ParseError(l))
		}
		b = b[l:]
		if n > 0 && int(n) < len(stringMembers) && stringMembers[n] != nil && typ == protowire.BytesType {
			v, l := protowire.ConsumeString(b)
			if l < 0 {
				return d, fmt.Errorf("event data, field %d: %w", n, protowire.ParseError(l))
			}
			*stringMembers[n](&d), b = v, b[l:]
			continue
		}
		if n == fieldRunStatusCode && typ == protowire.VarintType {
			v, l := protowire.ConsumeVarint(b)
			if l < 0 {
				return d, fmt.Errorf("event data, field %d: %w", n, protowire.ParseError(l))
			}
			d.RunStatusCode, b = int(protowire.DecodeZigZag(v)), b[l:]
			continue
		}
		// A member of a later release: skip it.
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return d, fmt.Errorf("event data, field %d: %w", n, protowire.ParseError(l))
		}
		b = b[l:]
	}
	return d, nil
}

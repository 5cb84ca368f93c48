package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	webhooks "github.com/jobhooks/jobhooks"
)

// unknownMembers is what decoding does with an object member whose name is
// not exactly one of its type's JSON field names. encoding/json matches
// names case-insensitively ("NAME" fills "name") and drops the others
// silently; the API's field names are exact, so such a member is unknown.
type unknownMembers int

const (
	// refuseUnknown: an unknown member is a 400 naming it. The API's own
	// objects (delivery settings, listeners, replays, ...) are decoded so:
	// a misspelt setting must not look applied.
	refuseUnknown unknownMembers = iota
	// ignoreUnknown: an unknown member is dropped. Only the spec's request
	// objects (webhook create and update) and the job runner's events,
	// which carry the spec's payload, are decoded so (docs/api.md).
	ignoreUnknown
)

// exactMembers returns the JSON value raw, to be decoded into a t, with
// only the object members whose name is exactly one of t's JSON field
// names; another one is dropped (ignoreUnknown) or refused with a problem
// naming it, path being where raw is ("" for the body, "headers[2]").
// Nested structs (also in arrays and map values) are filtered the same
// way; types that decode themselves (json.Unmarshaler) get their value as
// sent and filter it themselves.
func exactMembers(raw []byte, t reflect.Type, mode unknownMembers, path string) ([]byte, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return raw, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := jsonFields(t)
		return filterObject(raw, path, mode, func(name string) (reflect.Type, bool) {
			for _, f := range fields {
				if f.name == name {
					return f.typ, true
				}
			}
			return nil, false
		}, fields)
	case reflect.Map:
		if !containsStruct(t.Elem()) {
			return raw, nil
		}
		return filterObject(raw, path, mode, func(string) (reflect.Type, bool) { return t.Elem(), true }, nil)
	case reflect.Slice, reflect.Array:
		if !containsStruct(t.Elem()) {
			return raw, nil
		}
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return raw, nil // not an array: decoding reports the type error
		}
		out := []byte{'['}
		for i, item := range items {
			if i > 0 {
				out = append(out, ',')
			}
			v, err := exactMembers(item, t.Elem(), mode, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			out = append(out, v...)
		}
		return append(out, ']'), nil
	}
	return raw, nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decodeMembers decodes the JSON object raw, at path, into v (a pointer),
// its unknown members refused: for the API's own objects that decode
// themselves (a header of the delivery settings). A type error names the
// member at fault below path.
func decodeMembers(raw []byte, v any, path string) error {
	exact, err := exactMembers(raw, reflect.TypeOf(v), refuseUnknown, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(exact, v); err != nil {
		return memberTypeError(path, err)
	}
	return nil
}

// filterObject rebuilds the JSON object raw with the members keep accepts,
// in their order, each value filtered for the type keep gives; an unknown
// member is dropped or refused as mode says (known lists the names a
// refusal offers instead). Anything but an object is returned unchanged,
// for decoding to report.
func filterObject(raw []byte, path string, mode unknownMembers, keep func(name string) (reflect.Type, bool), known []jsonField) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return raw, nil
	}
	out := []byte{'{'}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return raw, nil
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return raw, nil
		}
		name, _ := tok.(string)
		ft, ok := keep(name)
		if !ok && mode == refuseUnknown {
			return nil, unknownMemberError(memberPath(path, name), known)
		}
		if !ok {
			continue
		}
		key, err := json.Marshal(name)
		if err != nil {
			return raw, nil
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, key...)
		out = append(out, ':')
		v, err := exactMembers(value, ft, mode, memberPath(path, name))
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// unknownMemberError refuses the member at field, offering the known names.
func unknownMemberError(field string, known []jsonField) error {
	names := make([]string, len(known))
	for i, f := range known {
		names[i] = f.name
	}
	if len(names) == 0 {
		return webhooks.FieldErrorf(field, "%s is not a known field.", field)
	}
	return webhooks.FieldErrorf(field, "%s is not a known field; the fields here are %s (names are exact, case included).",
		field, strings.Join(names, ", "))
}

// memberPath names member name of the object at path.
func memberPath(path, name string) string {
	name = cleanFieldName(name)
	if path == "" {
		return name
	}
	return path + "." + name
}

// cleanFieldName keeps a member name fit to show: printable ASCII, at most
// 64 bytes (it is echoed in the answer).
func cleanFieldName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < 64; i++ {
		if c := name[i]; c >= ' ' && c < 0x7f {
			b.WriteByte(c)
		} else {
			b.WriteByte('?')
		}
	}
	if len(name) > 64 {
		b.WriteString("...")
	}
	return b.String()
}

// jsonField is one field of a struct as encoding/json names it.
type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields lists the JSON names of t's fields (as encoding/json names
// them, embedded structs' fields promoted) with their types, in order.
func jsonFields(t reflect.Type) []jsonField {
	var fields []jsonField
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields = append(fields, jsonField{name, f.Type})
	}
	// The outer struct's fields win over promoted ones of the same name.
	for _, et := range embedded {
		for _, pf := range jsonFields(et) {
			taken := false
			for _, f := range fields {
				taken = taken || f.name == pf.name
			}
			if !taken {
				fields = append(fields, pf)
			}
		}
	}
	return fields
}

// containsStruct reports whether values of t can hold a struct decoded by
// encoding/json's own rules (so with case-insensitive names).
func containsStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Slice, reflect.Array, reflect.Map:
		return containsStruct(t.Elem())
	}
	return false
}

package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// exactMembers returns the JSON value raw, to be decoded into a t, without
// the object members whose name is not exactly one of t's JSON field names.
// encoding/json matches names case-insensitively ("NAME" fills "name"); the
// API's field names are exact, so such a member is an unknown field and,
// like every unknown field, ignored. Nested structs (also in arrays and map
// values) are filtered the same way; types that decode themselves
// (json.Unmarshaler) get their value as sent.
func exactMembers(raw []byte, t reflect.Type) []byte {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return raw
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := jsonFieldTypes(t)
		return filterObject(raw, func(name string) (reflect.Type, bool) {
			ft, ok := fields[name]
			return ft, ok
		})
	case reflect.Map:
		if !containsStruct(t.Elem()) {
			return raw
		}
		return filterObject(raw, func(string) (reflect.Type, bool) { return t.Elem(), true })
	case reflect.Slice, reflect.Array:
		if !containsStruct(t.Elem()) {
			return raw
		}
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return raw // not an array: decoding reports the type error
		}
		out := []byte{'['}
		for i, item := range items {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, exactMembers(item, t.Elem())...)
		}
		return append(out, ']')
	}
	return raw
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// filterObject rebuilds the JSON object raw with the members keep accepts,
// in their order, each value filtered for the type keep gives. Anything but
// an object is returned unchanged, for decoding to report.
func filterObject(raw []byte, keep func(name string) (reflect.Type, bool)) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return raw
	}
	out := []byte{'{'}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return raw
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return raw
		}
		name, _ := tok.(string)
		ft, ok := keep(name)
		if !ok {
			continue
		}
		key, err := json.Marshal(name)
		if err != nil {
			return raw
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, exactMembers(value, ft)...)
	}
	return append(out, '}')
}

// jsonFieldTypes maps the JSON names of t's fields (as encoding/json names
// them, embedded structs' fields promoted) to their types.
func jsonFieldTypes(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
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
		fields[name] = f.Type
	}
	// The outer struct's fields win over promoted ones of the same name.
	for _, et := range embedded {
		for name, ft := range jsonFieldTypes(et) {
			if _, taken := fields[name]; !taken {
				fields[name] = ft
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

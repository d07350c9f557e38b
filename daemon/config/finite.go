package config

import (
	"fmt"
	"math"
	"reflect"
)

// nonFinite returns a problem for every float in v (a config struct) that
// is NaN or ±Inf, named by its YAML key path. YAML reads .nan and .inf as
// floats, and a limit of NaN made every comparison false: the run executed
// in full, then failed writing "json: unsupported value: NaN" (exit 3, its
// report.json left "running"). It walks every field, so a new float key is
// covered without being listed.
func nonFinite(v reflect.Value, path string) []FieldError {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return []FieldError{{Path: path, Msg: fmt.Sprintf("must be a finite number (got %v)", f)}}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nonFinite(v.Elem(), path)
		}
	case reflect.Struct:
		var ps []FieldError
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name := yamlName(f)
			if name == "" {
				continue // unexported, or not read from YAML
			}
			p := join(path, name)
			ps = append(ps, nonFinite(v.Field(i), p)...)
		}
		return ps
	case reflect.Map:
		var ps []FieldError
		iter := v.MapRange()
		for iter.Next() {
			ps = append(ps, nonFinite(iter.Value(), join(path, fmt.Sprint(iter.Key().Interface())))...)
		}
		return ps
	case reflect.Slice, reflect.Array:
		var ps []FieldError
		for i := range v.Len() {
			ps = append(ps, nonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return ps
	}
	return nil
}

package params

import (
	"fmt"
	"math"
	"reflect"
)

// CheckFinite reports the first float parameter of v (a struct or a
// pointer to one) that is NaN or infinite, naming it by its dotted key
// ("fabric.crossbar_speedup .nan: want a finite number"). Decoding and Set
// refuse such values already; CheckFinite is for configurations built in
// code, so that a NaN cannot slip past range checks written as comparisons
// (NaN < 0 is false) whichever way it came in. It follows the same keys as
// Explain: nested structs and pointers to structs, not lists or maps, and
// not types that decode themselves.
func CheckFinite(v any) error {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil
	}
	return checkFinite(rv, "")
}

func checkFinite(v reflect.Value, prefix string) error {
	for _, f := range structFields(v.Type()).fields {
		fv := fieldByIndex(v, f.index)
		if !fv.IsValid() {
			continue
		}
		key := f.key
		if prefix != "" {
			key = prefix + "." + f.key
		}
		for fv.Kind() == reflect.Pointer && !custom(fv.Type()) {
			if fv.IsNil() {
				break
			}
			fv = fv.Elem()
		}
		switch {
		case fv.Kind() == reflect.Float32 || fv.Kind() == reflect.Float64:
			if x := fv.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s %g: want a finite number", key, x)
			}
		case fv.Kind() == reflect.Struct && !custom(fv.Type()):
			if err := checkFinite(fv, key); err != nil {
				return err
			}
		}
	}
	return nil
}

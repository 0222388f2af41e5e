package explore

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"reflect"
	"slices"
	"strings"
)

// key is a state's canonical hash: two 64-bit maphash sums, under two
// seeds, of an encoding of every field of the state, the machines'
// unexported fields included. Two distinct states collide with a
// probability near n*n/2^129 for n states: nil for the counts explored
// (the seeds are drawn per process, so a collision would not even repeat).
type key [2]uint64

var seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// hasher walks a value with reflection and feeds every field, exported or
// not, to the hash: reflect reads unexported fields' values (Int, Uint,
// String...) though it cannot set them. Pointers are followed (the states
// hold no cycles), interfaces hash their dynamic type and value, so two
// states hash alike only if every field of every machine is alike.
type hasher struct{ b []byte }

func (x *hasher) reset() { x.b = x.b[:0] }

func (x *hasher) u64(v uint64) { x.b = binary.LittleEndian.AppendUint64(x.b, v) }

func (x *hasher) str(s string) {
	x.u64(uint64(len(s)))
	x.b = append(x.b, s...)
}

func (x *hasher) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			x.u64(1)
		} else {
			x.u64(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x.u64(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x.u64(v.Uint())
	case reflect.Float32, reflect.Float64:
		x.u64(math.Float64bits(v.Float()))
	case reflect.String:
		x.str(v.String())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			x.value(v.Field(i))
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			x.value(v.Index(i))
		}
	case reflect.Slice:
		x.u64(uint64(v.Len()))
		for i := 0; i < v.Len(); i++ {
			x.value(v.Index(i))
		}
	case reflect.Pointer:
		if v.IsNil() {
			x.u64(0)
			return
		}
		x.u64(1)
		x.value(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			x.u64(0)
			return
		}
		e := v.Elem()
		x.str(e.Type().String())
		x.value(e)
	case reflect.Map:
		// In the order of its keys, which must be strings (a Group's
		// maps, the store's), or none.
		x.u64(uint64(v.Len()))
		if v.Len() == 0 {
			return
		}
		if v.Type().Key().Kind() != reflect.String {
			panic("explore: cannot hash a map not keyed by strings: " + v.Type().String())
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			x.str(k.String())
			x.value(v.MapIndex(k))
		}
	case reflect.Func:
		// A function (the store's clock) is the same in every state.
		x.u64(b2i(!v.IsNil()))
	default:
		panic("explore: cannot hash a " + v.Kind().String())
	}
}

func (x *hasher) sum() key {
	return key{maphash.Bytes(seeds[0], x.b), maphash.Bytes(seeds[1], x.b)}
}

package explore

import (
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// deepCopy returns a copy of *p that shares no memory the copy could
// change with *p: every pointer, slice and map reachable from it is
// copied, unexported fields included (reflect reads and, through
// unsafe, writes them). It is how a state holding an election.Group (a
// graph of maps and pointers, not a value) or a memstore.Store is cloned
// without a Clone method in those packages for the explorer's sake.
//
// Aliasing is kept: two pointers to one object point to one copy, and a
// pointer into a field of an object copied before it (a name's machine
// points at its Group's session view, an observer at its Group's feed
// flag) points into the copy of that field, as long as the object is
// reached first (the root is). A func is shared (the store's clock); a
// channel must be nil; a *time.Location is shared (it is never written).
func deepCopy[T any](p *T) *T {
	c := copier{memo: map[ptrKey]reflect.Value{}}
	return c.ptr(reflect.ValueOf(p)).Interface().(*T)
}

type ptrKey struct {
	addr uintptr
	t    reflect.Type
}

type copier struct{ memo map[ptrKey]reflect.Value }

var locationType = reflect.TypeOf((*time.Location)(nil))

// writable returns v, which must be addressable, without the read-only
// flag of a value reached through an unexported field.
func writable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem()
}

// ptr copies the object p points at (memoized).
func (c *copier) ptr(p reflect.Value) reflect.Value {
	if p.IsNil() || p.Type() == locationType {
		return p
	}
	k := ptrKey{p.Pointer(), p.Type()}
	if q, ok := c.memo[k]; ok {
		return q
	}
	old := p.Elem()
	q := reflect.New(old.Type())
	c.memo[k] = q
	if old.Kind() == reflect.Struct {
		// Pointers into its fields, met later, point into the copy's.
		for i := 0; i < old.NumField(); i++ {
			f := old.Type().Field(i)
			fk := ptrKey{p.Pointer() + f.Offset, reflect.PointerTo(f.Type)}
			if _, ok := c.memo[fk]; !ok {
				c.memo[fk] = reflect.NewAt(f.Type, unsafe.Add(q.UnsafePointer(), f.Offset))
			}
		}
	}
	dst := q.Elem()
	dst.Set(writable(old))
	c.fix(dst)
	return q
}

// fix replaces, in dst (addressable, writable, a shallow copy), every
// reference with a copy.
func (c *copier) fix(dst reflect.Value) {
	switch dst.Kind() {
	case reflect.Pointer:
		if !dst.IsNil() {
			dst.Set(c.ptr(dst))
		}
	case reflect.Struct:
		for i := 0; i < dst.NumField(); i++ {
			if needsFix(dst.Type().Field(i).Type) {
				c.fix(writable(dst.Field(i)))
			}
		}
	case reflect.Array:
		if needsFix(dst.Type().Elem()) {
			for i := 0; i < dst.Len(); i++ {
				c.fix(dst.Index(i))
			}
		}
	case reflect.Slice:
		if dst.IsNil() {
			return
		}
		s := reflect.MakeSlice(dst.Type(), dst.Len(), dst.Cap())
		reflect.Copy(s, dst)
		if needsFix(dst.Type().Elem()) {
			for i := 0; i < s.Len(); i++ {
				c.fix(s.Index(i))
			}
		}
		dst.Set(s)
	case reflect.Map:
		if dst.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(dst.Type(), dst.Len())
		fixv := needsFix(dst.Type().Elem())
		it := dst.MapRange()
		for it.Next() {
			v := it.Value()
			if fixv {
				tmp := reflect.New(v.Type()).Elem()
				tmp.Set(v)
				c.fix(tmp)
				v = tmp
			}
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Interface:
		if dst.IsNil() {
			return
		}
		e := dst.Elem()
		if needsFix(e.Type()) {
			tmp := reflect.New(e.Type()).Elem()
			tmp.Set(e)
			c.fix(tmp)
			dst.Set(tmp)
		}
	case reflect.Chan:
		if !dst.IsNil() {
			panic("explore: cannot copy a channel in " + dst.Type().String())
		}
	}
}

// fixCache is needsFix's answers by type (explorations may run in
// parallel: tests).
var fixCache sync.Map

// needsFix reports whether a value of type t holds a reference to copy.
func needsFix(t reflect.Type) bool {
	if v, ok := fixCache.Load(t); ok {
		return v.(bool)
	}
	v := false
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan:
		v = t != locationType
	case reflect.Array:
		v = needsFix(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if needsFix(t.Field(i).Type) {
				v = true
				break
			}
		}
	}
	fixCache.Store(t, v)
	return v
}

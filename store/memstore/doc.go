// Package memstore is an in-process Store: the reference backend for tests,
// the drill and the simulator. It is linearizable (one mutex) and keeps
// nothing on disk: the data is gone when the process ends.
//
// Fault hooks make a named node's calls fail or wait: Client(node) returns
// a view of the store whose calls obey the faults set for that node with
// SetUnreachable and SetDelay. Faults never change stored data.
//
// Open it like every backend, Open(ctx, opts...); New is the same for code
// that has no error to handle. Its URL for storeurl is "mem:".
package memstore

// Package panics keeps a panic in a goroutine that an activity starts from killing the worker
// process: Go runs a function in an errgroup goroutine and Recover, deferred at the top of any
// other goroutine, turns a panic into an *Error that the goroutine returns like any other error.
// Temporal's SDK recovers panics of an activity's own goroutine, but a panic in a goroutine the
// activity started ends the process, and with it every other activity the worker was running.
package panics

import (
	"errors"
	"fmt"
	"runtime/debug"

	"golang.org/x/sync/errgroup"
)

// Error is a panic recovered in a goroutine: a bug of storeopt (or of a library it calls), never
// an expected outcome. Input faults are recognised before they can panic, or recovered where the
// input is decoded and reported as input errors naming the chunk.
type Error struct {
	// Where names the goroutine ("encoder", "read-sort scan", …).
	Where string
	// Value is the value passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic (runtime/debug.Stack).
	Stack []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("internal error (a bug in storeopt; stack in the worker log): panic in %s: %v", e.Where, e.Value)
}

// Unwrap returns the panic value when it is an error (a runtime.Error, for instance).
func (e *Error) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var pe *Error
	ok := errors.As(err, &pe)
	return pe, ok
}

// Recover, deferred directly at the top of a goroutine's function, recovers a panic and stores it
// in *err as an *Error naming where (overwriting any error the function was returning).
func Recover(err *error, where string) {
	if r := recover(); r != nil {
		*err = &Error{Where: where, Value: r, Stack: debug.Stack()}
	}
}

// Go runs f in a new goroutine of g (errgroup.Group.Go) and returns a panic of f as an *Error
// naming where: g.Wait returns it (the group's context is cancelled, as for any error of f).
func Go(g *errgroup.Group, where string, f func() error) {
	g.Go(func() (err error) {
		defer Recover(&err, where)
		return f()
	})
}

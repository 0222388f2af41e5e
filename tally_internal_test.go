package baton

import (
	"testing"
	"testing/synctest"
)

// A tally's wait returns once every counted goroutine is done, and an add
// may come while wait waits (the driver's goroutine starting a term's
// candidate-row goroutine as Run returns): it is waited for too. Under the
// race detector a sync.WaitGroup in its place is reported for the add
// from zero during the wait, which CI saw in schedule's property test.
func TestTallyAddWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c tally
		c.wait() // nothing counted: at once

		c.add()
		returned := make(chan struct{})
		go func() { c.wait(); close(returned) }()
		synctest.Wait() // wait is blocked on the one counted
		c.done()        // back to zero: wait may return ...
		c.add()         // ... as another is counted, from zero
		<-returned
		waitAgain := make(chan struct{})
		go func() { c.wait(); close(waitAgain) }()
		synctest.Wait()
		select {
		case <-waitAgain:
			t.Fatal("wait returned while a goroutine added after zero still runs")
		default:
		}
		c.add()
		c.done()
		synctest.Wait()
		select {
		case <-waitAgain:
			t.Fatal("wait returned with one counted goroutine left")
		default:
		}
		c.done()
		<-waitAgain
	})
}

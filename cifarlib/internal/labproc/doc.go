// Package labproc is the plumbing of the lab process: a process that outlives a notebook's
// cells and keeps what they would otherwise build again (the backend, the data, the weights
// of the runs, the compiled programs). GoNB runs every cell as a new program; package nb
// starts the lab process from the cell's own binary, one per kernel, and sends it the cells'
// expensive calls over a unix socket.
//
// This package knows nothing of training: it gives the socket's folder (readable only by its
// user), the fingerprint of the library code a cell was built from, the wire format (one
// request per connection, then a stream of messages and a final one), the server's lifecycle
// (it ends with its kernel, when idle, or when a cell built from other code asks for it) and
// the lock that keeps two processes from writing one run folder. Package nb holds the
// requests' meaning.
package labproc

package app

import (
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store/postgres"
)

// Replicas. Several servers on one PostgreSQL database serve the same agents:
// each task row names the replica that last wrote it (its lease keeps it
// alive, recover.go), and each replica hears of the others' task writes
// through the database's feed (LISTEN/NOTIFY), which every agent's handler
// follows. A stream, a resumed stream or a CancelTask may therefore land on
// any replica, whichever runs the task; no sticky sessions are needed.

// feeder is a database whose replicas announce their task writes.
type feeder interface {
	TaskFeed() a2asrv.TaskFeed
}

var _ feeder = (*postgres.DB)(nil)

// taskFeed is the feed the handlers follow: the database's, or the one
// Options give beside a custom TaskStore; nil when this server is its
// tasks' only writer.
func (s *Server) taskFeed() a2asrv.TaskFeed {
	if f, ok := s.db.(feeder); ok {
		return f.TaskFeed()
	}
	return s.opts.TaskFeed
}

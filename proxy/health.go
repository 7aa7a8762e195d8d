package proxy

// Ready reports whether the proxy can take guarded calls: false after a
// journal write failed, until a later one succeeds or the journal answers
// a probe (Store.Ping, at most once a second), so that readiness comes
// back by itself when the disk or the database does, traffic or not. The
// admin API's /readyz asks it (admin.Proxy).
func (s *Server) Ready() bool { return s.health.Ready(s.opts.Journal) }

package execgw

import "novaos.dev/novaos/gateway"

// SetParkHook has f hear of every delivery s parks because its run's
// debugger holds it, with the delivery's copy of the run (the one the
// debugger held it on); set it before s runs.
func SetParkHook(s *Service, f func(run gateway.Run)) { s.onPark = f }

// SetQueueHook has f hear of each item of an agent's stream s reads ahead
// of its recording; set it before a run is delivered.
func SetQueueHook(s *Service, f func()) { s.onQueued = f }

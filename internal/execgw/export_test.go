package execgw

// SetParkHook has f hear of every delivery s parks because its run's
// debugger holds it; set it before s runs.
func SetParkHook(s *Service, f func(runID string)) { s.onPark = f }

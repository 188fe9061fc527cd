package sqlstore

import (
	"time"

	"novaos.dev/novaos/a2a/a2asrv"
)

// PushStateCols are the columns of a2a_push_configs that ScanPushState
// reads, in its order: a config's delivery state, its times in
// milliseconds since the Unix epoch, 0 for never.
const PushStateCols = `state, pending, attempts, last_error, last_attempt_ms, last_delivered_ms`

// ScanPushState reads a row of PushStateCols.
func ScanPushState(r Scanner) (*a2asrv.PushDeliveryState, error) {
	var (
		st                 a2asrv.PushDeliveryState
		attempt, delivered int64
	)
	if err := r.Scan(&st.State, &st.Pending, &st.Attempts, &st.LastError, &attempt, &delivered); err != nil {
		return nil, err
	}
	if attempt != 0 {
		st.LastAttempt = time.UnixMilli(attempt)
	}
	if delivered != 0 {
		st.LastDelivered = time.UnixMilli(delivered)
	}
	return &st, nil
}

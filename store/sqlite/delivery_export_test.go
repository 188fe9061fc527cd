package sqlite

// The delivery store's reads, whose plans a test checks.
const (
	DeliveryEventsSQL = deliveryEventsSQL
	DedupedEventSQL   = dedupedEventSQL
	GetConsumerSQL    = getConsumerSQL
	ThreadMessagesSQL = threadMessagesSQL
	FindAPITokenSQL   = findAPITokenSQL
)

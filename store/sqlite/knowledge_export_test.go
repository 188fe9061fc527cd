package sqlite

// KnClaimJobsSQL and KnClaimGraphsSQL are KnowledgeStore's claims.
const (
	KnClaimJobsSQL   = knClaimJobsSQL
	KnClaimGraphsSQL = knClaimGraphsSQL
)

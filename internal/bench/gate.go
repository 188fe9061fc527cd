package bench

import (
	"strconv"
)

// GateActionType is the action type of the gate bench's writes: a
// customer-service refund (context type cs).
const GateActionType = "refund"

// GateRuleSet is the rule set document the gate bench loads: 20 CEL rules
// of the kinds a support team's set holds (amount thresholds, trajectory
// aggregates over the ledger per customer and per tenant, membership and
// string tests on the context, the session and the evidence, a clock
// check) and one text-only rule for the judge. Five aggregates, three per
// customer and two tenant-wide, make five ledger queries per write.
//
// None of the conditions holds for the bench's refunds ([GateCustomer],
// amounts of 1 to 500, currency EUR), so every rule is evaluated in full
// and every write passes: the bench measures the pass path a production
// gate takes for nearly every write.
const GateRuleSet = `{
  "rules": [
    {"id": "big-refund", "text": "Hold refunds over 5,000.", "when": "action.type == 'refund' && ctx.amount > 5000.0", "verdict": "hold"},
    {"id": "repeat-refund", "text": "Hold a customer's 50th refund in a week.", "when": "action.type == 'refund' && agg.refunds_168h >= 50.0", "verdict": "hold"},
    {"id": "refund-burst", "text": "Kill a customer's 20th refund within an hour.", "when": "action.type == 'refund' && agg.refunds_1h >= 20.0", "verdict": "kill"},
    {"id": "daily-sum", "text": "Hold refunds past 20,000 a day for one customer.", "when": "action.type == 'refund' && agg.refund_sum_24h + ctx.amount > 20000.0", "verdict": "hold"},
    {"id": "tenant-velocity", "text": "Hold every refund when the tenant refunds more than ten million times an hour.", "when": "agg.tenant_refunds_1h > 10000000.0", "verdict": "hold"},
    {"id": "tenant-sum", "text": "Kill refunds past a trillion a day across the tenant.", "when": "agg.tenant_refund_sum_24h > 1000000000000.0", "verdict": "kill"},
    {"id": "sanctioned-currency", "text": "Never refund in a sanctioned currency.", "when": "has(ctx.currency) && ctx.currency in ['KPW', 'IRR', 'SYP']", "verdict": "kill"},
    {"id": "no-currency", "text": "Hold a refund that names no currency.", "when": "!has(ctx.currency)", "verdict": "hold"},
    {"id": "vip", "text": "Hold refunds over 1,000 to VIP customers.", "when": "ctx.customer_id.startsWith('vip-') && ctx.amount > 1000.0", "verdict": "hold"},
    {"id": "test-customer", "text": "Never refund a test customer.", "when": "ctx.customer_id.startsWith('test-') || ctx.customer_id.endsWith('-test')", "verdict": "kill"},
    {"id": "no-reasoning", "text": "Hold a refund the agent gave no reason for.", "when": "size(action.reasoning) == 0", "verdict": "hold"},
    {"id": "failed-lookup", "text": "Kill a refund after a failed customer lookup.", "when": "evidence.exists(e, e.tool == 'lookup_customer' && e.error != '')", "verdict": "kill"},
    {"id": "open-dispute", "text": "Hold refunds over 100 while the customer has an open dispute.", "when": "has(ctx.open_dispute_count) && ctx.open_dispute_count > 0 && ctx.amount > 100.0", "verdict": "hold"},
    {"id": "refunds-7d", "text": "Hold when the customer had five refunds in seven days by the CRM's count.", "when": "has(ctx.refunds_last_7d) && ctx.refunds_last_7d >= 5", "verdict": "hold"},
    {"id": "exception-ticket", "text": "Kill an exception that does not cite an approved ticket.", "when": "has(ctx.exception_ticket_id) && !ctx.exception_ticket_id.matches('^EXC-[0-9]+$')", "verdict": "kill"},
    {"id": "clock", "text": "Kill every write when the gate's clock is wrong.", "when": "now < timestamp('2020-01-01T00:00:00Z')", "verdict": "kill"},
    {"id": "agent", "text": "Only the refund agent refunds.", "when": "action.type == 'refund' && session.agent != 'bench-agent'", "verdict": "kill"},
    {"id": "team", "text": "Only support and billing refund.", "when": "!(session.team in ['support', 'billing'])", "verdict": "kill"},
    {"id": "ticket-id", "text": "Hold a refund whose ticket id is implausibly long.", "when": "has(ctx.ticket_id) && size(ctx.ticket_id) > 64", "verdict": "hold"},
    {"id": "negative", "text": "Kill a negative refund.", "when": "ctx.amount < 0.0", "verdict": "kill"},
    {"id": "threats", "text": "Never refund a customer who threatened staff."}
  ],
  "aggregates": [
    {"name": "refunds_168h", "action_type": "refund", "measure": "count", "window": "168h"},
    {"name": "refunds_1h", "action_type": "refund", "measure": "count", "window": "1h"},
    {"name": "refund_sum_24h", "action_type": "refund", "measure": "sum", "window": "24h"},
    {"name": "tenant_refunds_1h", "action_type": "refund", "measure": "count", "window": "1h", "scope": "tenant"},
    {"name": "tenant_refund_sum_24h", "action_type": "refund", "measure": "sum", "window": "24h", "scope": "tenant"}
  ]
}`

// GateCustomers is how many customers the bench's refunds spread over,
// so the per-customer aggregates stay far below the rules' thresholds.
const GateCustomers = 10_000

// GateCustomer is the customer id of the gate bench's nth refund.
func GateCustomer(n uint64) string {
	return "c-" + strconv.FormatUint(n%GateCustomers, 10)
}

// GateAmount is the amount of the nth refund: 1 to 500.
func GateAmount(n uint64) float64 {
	return float64(1 + (n*7919)%500)
}

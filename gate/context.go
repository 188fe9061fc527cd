package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"time"
)

// Context is the evidence a write's context builder produces: what the
// rules are judged against, and (with the action type) what a standing
// approval is bound to. Put every field that decides what the write does
// into it; two writes whose contexts are equal are the same commitment.
type Context interface {
	// ContextType names the vertical on the wire ("generic", "ap", "cs").
	ContextType() string
	// Validate reports what is missing or malformed; a write whose context
	// does not validate fails closed before any request.
	Validate() error
}

// The context types on the wire, after the Python gate SDK's vertical modules
// (novarch.verticals.generic, .ap, .cs).
const (
	ContextGeneric = "generic"
	ContextAP      = "ap"
	ContextCS      = "cs"
)

// GenericContext is the minimal, vertical-agnostic context: a record id, a
// summary, an amount, and any extra fields the rules should see. Extra
// fields sit beside the named ones in the JSON object, as in the Python gate
// SDK (GenericContext(record_id=…, open_dispute_count=3)).
type GenericContext struct {
	RecordID string `json:"record_id"`
	Summary  string `json:"summary,omitempty"`
	// Amount is a pointer so "no amount" and "an amount of 0" differ: a
	// rule keyed on the amount must not read an absent one as zero.
	Amount *float64 `json:"amount,omitempty"`
	// Extra holds the free fields. Values must encode as JSON; decoded
	// numbers are json.Number so they round-trip exactly.
	Extra map[string]any `json:"-"`
}

var genericNames = []string{"record_id", "summary", "amount"}

// ContextType returns "generic".
func (GenericContext) ContextType() string { return ContextGeneric }

// Validate requires a record id, a finite amount and extra names that do
// not shadow the named fields.
func (c GenericContext) Validate() error {
	var errs []error
	if c.RecordID == "" {
		errs = append(errs, errors.New("record_id: required"))
	}
	if err := checkAmount(c.Amount, false); err != nil {
		errs = append(errs, err)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
		if k == "" {
			errs = append(errs, errors.New("extra: empty field name"))
		} else if slices.Contains(genericNames, k) {
			errs = append(errs, fmt.Errorf("extra: %q shadows a named field", k))
		}
	}
	return errors.Join(errs...)
}

// MarshalJSON writes the named fields and the extras as one object, keys
// sorted (encoding/json sorts map keys), so equal contexts encode equally.
func (c GenericContext) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(c.Extra)+3)
	for k, v := range c.Extra {
		if slices.Contains(genericNames, k) {
			return nil, fmt.Errorf("gate: generic context: extra field %q shadows a named field", k)
		}
		m[k] = v
	}
	m["record_id"] = c.RecordID
	if c.Summary != "" {
		m["summary"] = c.Summary
	}
	if c.Amount != nil {
		m["amount"] = *c.Amount
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the named fields and keeps every other member in
// Extra, as the Python gate SDK's model keeps extra keyword fields.
func (c *GenericContext) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		return errors.New("gate: generic context: expected an object, got null")
	}
	var out GenericContext
	for k, v := range raw {
		var err error
		switch k {
		case "record_id":
			err = json.Unmarshal(v, &out.RecordID)
		case "summary":
			err = json.Unmarshal(v, &out.Summary)
		case "amount":
			err = json.Unmarshal(v, &out.Amount)
		default:
			var x any
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.UseNumber()
			if err = dec.Decode(&x); err == nil {
				if out.Extra == nil {
					out.Extra = map[string]any{}
				}
				out.Extra[k] = x
			}
		}
		if err != nil {
			return fmt.Errorf("gate: generic context: %s: %w", k, err)
		}
	}
	*c = out
	return nil
}

// APContext is the accounts-payable context: a payment to a vendor, with
// the signals the Python gate SDK's AP rules key off (bank-detail change
// recency, the destination account). Unknown fields are refused when
// decoding.
type APContext struct {
	VendorID   string  `json:"vendor_id"`
	VendorName string  `json:"vendor_name,omitempty"`
	InvoiceID  string  `json:"invoice_id,omitempty"`
	PONumber   string  `json:"po_number,omitempty"`
	Amount     float64 `json:"amount"`
	Currency   string  `json:"currency,omitempty"`
	// PayeeAccount is the destination account. Leave it out and two
	// payments that differ only in where the money goes are one
	// commitment to the gate.
	PayeeAccount string `json:"payee_account,omitempty"`
	// BankDetailsChangedAt is when the vendor's bank details last changed;
	// the classic rule holds a payment within days of a change.
	BankDetailsChangedAt *time.Time `json:"bank_details_changed_at,omitempty"`
	Summary              string     `json:"summary,omitempty"`
}

// ContextType returns "ap".
func (APContext) ContextType() string { return ContextAP }

// Validate requires a vendor and a positive amount.
func (c APContext) Validate() error {
	var errs []error
	if c.VendorID == "" {
		errs = append(errs, errors.New("vendor_id: required"))
	}
	if err := checkAmount(&c.Amount, true); err != nil {
		errs = append(errs, err)
	}
	if err := checkCurrency(c.Currency); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// UnmarshalJSON refuses unknown fields: a typed context is a fixed signal
// set, and a misspelt signal must not vanish silently.
func (c *APContext) UnmarshalJSON(data []byte) error {
	type plain APContext
	return unmarshalKnown(data, (*plain)(c), "ap context")
}

// CSContext is the customer-support context: a refund or a promise to a
// customer, with the signals the Python gate SDK names (refunds this week, open
// disputes, an exception-ticket reference for off-policy promises).
// Counts are pointers so an unknown count is not read as zero.
type CSContext struct {
	CustomerID string   `json:"customer_id"`
	TicketID   string   `json:"ticket_id,omitempty"`
	OrderID    string   `json:"order_id,omitempty"`
	Amount     *float64 `json:"amount,omitempty"`
	Currency   string   `json:"currency,omitempty"`
	// RefundsLast7d counts the customer's refunds in the last 7 days.
	RefundsLast7d *int `json:"refunds_last_7d,omitempty"`
	// OpenDisputeCount counts the customer's open disputes.
	OpenDisputeCount *int `json:"open_dispute_count,omitempty"`
	// ExceptionTicketID references the approved exception that makes an
	// off-policy promise legitimate.
	ExceptionTicketID string `json:"exception_ticket_id,omitempty"`
	Summary           string `json:"summary,omitempty"`
}

// ContextType returns "cs".
func (CSContext) ContextType() string { return ContextCS }

// Validate requires a customer, a non-negative finite amount and
// non-negative counts.
func (c CSContext) Validate() error {
	var errs []error
	if c.CustomerID == "" {
		errs = append(errs, errors.New("customer_id: required"))
	}
	if err := checkAmount(c.Amount, false); err != nil {
		errs = append(errs, err)
	}
	if err := checkCurrency(c.Currency); err != nil {
		errs = append(errs, err)
	}
	if c.RefundsLast7d != nil && *c.RefundsLast7d < 0 {
		errs = append(errs, errors.New("refunds_last_7d: must not be negative"))
	}
	if c.OpenDisputeCount != nil && *c.OpenDisputeCount < 0 {
		errs = append(errs, errors.New("open_dispute_count: must not be negative"))
	}
	return errors.Join(errs...)
}

// UnmarshalJSON refuses unknown fields (see APContext.UnmarshalJSON).
func (c *CSContext) UnmarshalJSON(data []byte) error {
	type plain CSContext
	return unmarshalKnown(data, (*plain)(c), "cs context")
}

func unmarshalKnown(data []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("gate: %s: %w", what, err)
	}
	return nil
}

// checkAmount refuses infinities and NaN (which JSON cannot carry anyway)
// and negative amounts; positive also refuses zero and a missing amount.
func checkAmount(a *float64, positive bool) error {
	switch {
	case a == nil && positive:
		return errors.New("amount: required")
	case a == nil:
		return nil
	case math.IsNaN(*a) || math.IsInf(*a, 0):
		return errors.New("amount: must be finite")
	case *a < 0:
		return errors.New("amount: must not be negative")
	case positive && *a == 0:
		return errors.New("amount: must be positive")
	}
	return nil
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

func checkCurrency(c string) error {
	if c != "" && !currencyCode.MatchString(c) {
		return fmt.Errorf("currency: %q is not an ISO 4217 code", c)
	}
	return nil
}

// decodeContext decodes a context of the named type.
func decodeContext(typ string, data []byte) (Context, error) {
	switch typ {
	case ContextGeneric:
		var c GenericContext
		err := json.Unmarshal(data, &c)
		return c, err
	case ContextAP:
		var c APContext
		err := json.Unmarshal(data, &c)
		return c, err
	case ContextCS:
		var c CSContext
		err := json.Unmarshal(data, &c)
		return c, err
	}
	return nil, fmt.Errorf("context_type: %q is not generic, ap or cs", typ)
}

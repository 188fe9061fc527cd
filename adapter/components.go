package adapter

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"novaos.dev/novaos/delivery"
)

// Component types.
const (
	ComponentButton = "button"
	ComponentSelect = "select"
	ComponentForm   = "form"
)

// Button styles.
const (
	StylePrimary   = "primary"
	StyleSecondary = "secondary"
	StyleSuccess   = "success"
	StyleDanger    = "danger"
	StyleGhost     = "ghost"
)

// Form field types.
const (
	FieldText     = "text"
	FieldTextarea = "textarea"
	FieldNumber   = "number"
	FieldBoolean  = "boolean"
	FieldChoice   = "choice"
)

// The approval card's answers; each button's custom id is
// ApprovalCustomIDPrefix followed by its answer.
const (
	ApprovalOnce    = "once"    // allow this action once
	ApprovalSession = "session" // allow it for the rest of the run
	ApprovalAlways  = "always"  // allow it from now on (the owner only)
	ApprovalDeny    = "deny"

	ApprovalCustomIDPrefix = "approval."
)

// Who may press a component, and what they must be allowed.
const (
	// CapabilityApproveActions is what a person needs to approve an
	// agent's action.
	CapabilityApproveActions = "approve_actions"
	// RestrictedToRunStarter lets only the person who started the run
	// press it; RestrictedToOwner only the agent's owner.
	RestrictedToRunStarter = "run_starter"
	RestrictedToOwner      = "owner"
)

// Fixed bounds of components and commands; the ones an operator may set
// are in Settings.
const (
	ComponentLabelMax      = 80  // characters of a label
	ComponentOptionsMax    = 25  // options of a select, choices of a choice field
	ComponentValueMax      = 100 // characters of an option's value or label
	CommandNameMax         = 32  // characters of a command or option name
	CommandOptionsMax      = 25  // options of a command
	componentFieldNameMax  = 64
	componentCapabilityMax = 64
)

var (
	componentCustomID   = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._:-]*$`)
	componentFieldName  = regexp.MustCompile(`^[a-z0-9][a-z0-9_]*$`)
	componentCapability = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	commandName         = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
)

// ComponentError says which part of a component or command is not
// acceptable and why. It names the part by a JSON pointer and never
// repeats its value.
type ComponentError struct {
	// Pointer is the part's JSON pointer, such as /components/2/style
	// or /options/0/choices.
	Pointer string
	// Rule is what the part must be.
	Rule string
}

func (e *ComponentError) Error() string { return "adapter: " + e.Pointer + ": " + e.Rule }

// Button returns a button. Style is one of the Style constants; empty
// means StyleSecondary.
func Button(customID, label, style string) (delivery.Component, error) {
	if style == "" {
		style = StyleSecondary
	}
	c := delivery.Component{Type: ComponentButton, CustomID: customID, Label: label, Style: style}
	return c, componentCheck("", c, nil)
}

// Select returns a select of options, each value once.
func Select(customID, label string, options ...delivery.SelectOption) (delivery.Component, error) {
	c := delivery.Component{Type: ComponentSelect, CustomID: customID, Label: label, Options: options}
	return c, componentCheck("", c, nil)
}

// Form returns a form of fields, each name once; a field of type
// FieldChoice has choices, others none.
func Form(customID, label string, fields ...delivery.FormField) (delivery.Component, error) {
	c := delivery.Component{Type: ComponentForm, CustomID: customID, Label: label, Fields: fields}
	return c, componentCheck("", c, nil)
}

// ApprovalCard returns the buttons that ask a person to approve an
// action: once, for the session, always (when withAlways), or deny.
// Each custom id is ApprovalCustomIDPrefix and the answer; all but deny
// need CapabilityApproveActions; all are for the run's starter but
// always, which only the agent's owner may press. Send them as a card
// message (delivery.MessageCard).
func ApprovalCard(withAlways bool) []delivery.Component {
	b := func(answer, label, style, restricted, capability string) delivery.Component {
		return delivery.Component{Type: ComponentButton, CustomID: ApprovalCustomIDPrefix + answer, Label: label, Style: style,
			RequiredCapability: capability, RestrictedTo: restricted}
	}
	card := []delivery.Component{
		b(ApprovalOnce, "Allow once", StylePrimary, RestrictedToRunStarter, CapabilityApproveActions),
		b(ApprovalSession, "Allow for this session", StyleSecondary, RestrictedToRunStarter, CapabilityApproveActions),
	}
	if withAlways {
		card = append(card, b(ApprovalAlways, "Always allow", StyleSecondary, RestrictedToOwner, CapabilityApproveActions))
	}
	return append(card, b(ApprovalDeny, "Deny", StyleDanger, RestrictedToRunStarter, ""))
}

// ApprovalAnswer reads an approval card's answer from the custom id of
// an interaction: once, session, always or deny, and whether it is one.
func ApprovalAnswer(customID string) (string, bool) {
	answer, ok := strings.CutPrefix(customID, ApprovalCustomIDPrefix)
	switch answer {
	case ApprovalOnce, ApprovalSession, ApprovalAlways, ApprovalDeny:
		if ok {
			return answer, true
		}
	}
	return "", false
}

// QuestionCard returns a choice question as buttons, one per choice,
// labelled with the choice's label and with the custom id customID "."
// value (so values are distinct and fit a custom id: letters, digits
// and . _ : -); ask the question in the card message's text.
func QuestionCard(customID string, choices ...delivery.SelectOption) ([]delivery.Component, error) {
	if len(choices) == 0 {
		return nil, &ComponentError{"/choices", "must have at least one choice"}
	}
	if err := componentOptions("/choices", choices, ComponentOptionsMax); err != nil {
		return nil, err
	}
	card := make([]delivery.Component, len(choices))
	for i, ch := range choices {
		card[i] = delivery.Component{Type: ComponentButton, CustomID: customID + "." + ch.Value, Label: ch.Label, Style: StyleSecondary}
		if err := componentCheck("/choices/"+strconv.Itoa(i), card[i], nil); err != nil {
			return nil, err
		}
	}
	return card, nil
}

// CheckComponents checks the components of one message against the
// vocabularies and s's limits (ComponentMaxPerMessage,
// ComponentCustomIDMax, ComponentFormMaxFields); custom ids are
// distinct. An adapter checks a card before it sends it.
func CheckComponents(s Settings, cs []delivery.Component) error {
	if len(cs) > s.ComponentMaxPerMessage {
		return &ComponentError{"/components", "must have at most " + strconv.Itoa(s.ComponentMaxPerMessage) + " components"}
	}
	seen := make(map[string]bool, len(cs))
	for i, c := range cs {
		at := "/components/" + strconv.Itoa(i)
		if err := componentCheck(at, c, &s); err != nil {
			return err
		}
		if seen[c.CustomID] {
			return &ComponentError{at + "/custom_id", "repeats the custom id of an earlier component"}
		}
		seen[c.CustomID] = true
	}
	return nil
}

// componentCheck checks one component's vocabulary and shape, and, when
// s is set, its limits.
func componentCheck(at string, c delivery.Component, s *Settings) error {
	fail := func(part, rule string) error { return &ComponentError{at + part, rule} }
	if !componentCustomID.MatchString(c.CustomID) {
		return fail("/custom_id", "must match "+componentCustomID.String())
	}
	if s != nil && utf8.RuneCountInString(c.CustomID) > s.ComponentCustomIDMax {
		return fail("/custom_id", "must be at most "+strconv.Itoa(s.ComponentCustomIDMax)+" characters")
	}
	if utf8.RuneCountInString(c.Label) > ComponentLabelMax || !utf8.ValidString(c.Label) {
		return fail("/label", "must be text of at most "+strconv.Itoa(ComponentLabelMax)+" characters")
	}
	if c.RequiredCapability != "" && (len(c.RequiredCapability) > componentCapabilityMax || !componentCapability.MatchString(c.RequiredCapability)) {
		return fail("/required_capability", "must match "+componentCapability.String())
	}
	switch c.RestrictedTo {
	case "", RestrictedToRunStarter, RestrictedToOwner:
	default:
		return fail("/restricted_to", `must be "run_starter", "owner" or empty`)
	}
	switch c.Type {
	case ComponentButton:
		if c.Label == "" {
			return fail("/label", "a button needs a label")
		}
		switch c.Style {
		case StylePrimary, StyleSecondary, StyleSuccess, StyleDanger, StyleGhost:
		default:
			return fail("/style", "must be primary, secondary, success, danger or ghost")
		}
		if c.Options != nil || c.Fields != nil {
			return fail("", "a button has no options or fields")
		}
	case ComponentSelect:
		if c.Style != "" || c.Fields != nil {
			return fail("", "a select has no style or fields")
		}
		if len(c.Options) == 0 {
			return fail("/options", "a select needs at least one option")
		}
		return componentOptions(at+"/options", c.Options, ComponentOptionsMax)
	case ComponentForm:
		if c.Style != "" || c.Options != nil {
			return fail("", "a form has no style or options")
		}
		return componentFields(at+"/fields", c.Fields, s)
	default:
		return fail("/type", "must be button, select or form")
	}
	return nil
}

// componentOptions checks options or choices: at most maxN, each with
// a label and a value, values distinct.
func componentOptions(at string, opts []delivery.SelectOption, maxN int) error {
	if len(opts) > maxN {
		return &ComponentError{at, "must have at most " + strconv.Itoa(maxN) + " items"}
	}
	seen := make(map[string]bool, len(opts))
	for i, o := range opts {
		p := at + "/" + strconv.Itoa(i)
		if o.Label == "" || utf8.RuneCountInString(o.Label) > ComponentValueMax || !utf8.ValidString(o.Label) {
			return &ComponentError{p + "/label", "must be text of 1 to " + strconv.Itoa(ComponentValueMax) + " characters"}
		}
		if o.Value == "" || utf8.RuneCountInString(o.Value) > ComponentValueMax || !utf8.ValidString(o.Value) {
			return &ComponentError{p + "/value", "must be text of 1 to " + strconv.Itoa(ComponentValueMax) + " characters"}
		}
		if seen[o.Value] {
			return &ComponentError{p + "/value", "repeats an earlier value"}
		}
		seen[o.Value] = true
	}
	return nil
}

// componentFields checks a form's fields, and their number when s is set.
func componentFields(at string, fields []delivery.FormField, s *Settings) error {
	if len(fields) == 0 {
		return &ComponentError{at, "a form needs at least one field"}
	}
	if s != nil && len(fields) > s.ComponentFormMaxFields {
		return &ComponentError{at, "must have at most " + strconv.Itoa(s.ComponentFormMaxFields) + " fields"}
	}
	seen := make(map[string]bool, len(fields))
	for i, f := range fields {
		p := at + "/" + strconv.Itoa(i)
		if len(f.Name) > componentFieldNameMax || !componentFieldName.MatchString(f.Name) {
			return &ComponentError{p + "/name", "must match " + componentFieldName.String() + " of at most " + strconv.Itoa(componentFieldNameMax) + " characters"}
		}
		if seen[f.Name] {
			return &ComponentError{p + "/name", "repeats an earlier field's name"}
		}
		seen[f.Name] = true
		if f.Label == "" || utf8.RuneCountInString(f.Label) > ComponentLabelMax || !utf8.ValidString(f.Label) {
			return &ComponentError{p + "/label", "must be text of 1 to " + strconv.Itoa(ComponentLabelMax) + " characters"}
		}
		switch f.Type {
		case FieldChoice:
			if len(f.Choices) == 0 {
				return &ComponentError{p + "/choices", "a choice field needs at least one choice"}
			}
			if err := componentOptions(p+"/choices", f.Choices, ComponentOptionsMax); err != nil {
				return err
			}
		case FieldText, FieldTextarea, FieldNumber, FieldBoolean:
			if f.Choices != nil {
				return &ComponentError{p + "/choices", "only a choice field has choices"}
			}
		default:
			return &ComponentError{p + "/type", "must be text, textarea, number, boolean or choice"}
		}
	}
	return nil
}

// CommandSpec is a command an agent offers: its name (lower-case
// letters, digits, _ and -, at most CommandNameMax characters), what it
// does, and its options.
type CommandSpec struct {
	Name        string
	Description string
	Options     []delivery.CommandOption
}

// Register checks the command against s's limits (CommandDescriptionMax
// for every description, AutocompleteMaxChoices for an option's
// choices) and returns its registration.
func (c CommandSpec) Register(s Settings) (delivery.CommandRegister, error) {
	if err := commandCheckName("/name", c.Name); err != nil {
		return delivery.CommandRegister{}, err
	}
	if err := commandCheckDescription("/description", c.Description, s); err != nil {
		return delivery.CommandRegister{}, err
	}
	if len(c.Options) > CommandOptionsMax {
		return delivery.CommandRegister{}, &ComponentError{"/options", "must have at most " + strconv.Itoa(CommandOptionsMax) + " options"}
	}
	seen := make(map[string]bool, len(c.Options))
	opts := make([]delivery.CommandOption, len(c.Options))
	for i, o := range c.Options {
		p := "/options/" + strconv.Itoa(i)
		if err := commandCheckName(p+"/name", o.Name); err != nil {
			return delivery.CommandRegister{}, err
		}
		if seen[o.Name] {
			return delivery.CommandRegister{}, &ComponentError{p + "/name", "repeats an earlier option's name"}
		}
		seen[o.Name] = true
		if err := commandCheckDescription(p+"/description", o.Description, s); err != nil {
			return delivery.CommandRegister{}, err
		}
		if o.Autocomplete && o.Choices != nil {
			return delivery.CommandRegister{}, &ComponentError{p, "an option has choices or autocomplete, not both"}
		}
		if o.Choices != nil {
			if len(o.Choices) == 0 {
				return delivery.CommandRegister{}, &ComponentError{p + "/choices", "must have at least one choice when given"}
			}
			if err := componentOptions(p+"/choices", o.Choices, s.AutocompleteMaxChoices); err != nil {
				return delivery.CommandRegister{}, err
			}
		}
		opts[i] = o
		opts[i].Choices = slices.Clone(o.Choices)
	}
	if len(opts) == 0 {
		opts = nil
	}
	return delivery.CommandRegister{Name: c.Name, Description: c.Description, Options: opts}, nil
}

// CheckAutocompleteChoices checks an answer to an autocomplete request:
// at most s.AutocompleteMaxChoices choices, each with a label and a
// value, values distinct. An answer that fails is not sent.
func CheckAutocompleteChoices(s Settings, choices []delivery.SelectOption) error {
	return componentOptions("/choices", choices, s.AutocompleteMaxChoices)
}

func commandCheckName(at, name string) error {
	if len(name) > CommandNameMax || !commandName.MatchString(name) {
		return &ComponentError{at, "must match " + commandName.String() + " of at most " + strconv.Itoa(CommandNameMax) + " characters"}
	}
	return nil
}

func commandCheckDescription(at, d string, s Settings) error {
	if d == "" || utf8.RuneCountInString(d) > s.CommandDescriptionMax || !utf8.ValidString(d) {
		return &ComponentError{at, "must be text of 1 to " + strconv.Itoa(s.CommandDescriptionMax) + " characters"}
	}
	return nil
}

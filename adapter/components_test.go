package adapter

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/delivery"
)

func componentOpts(values ...string) []delivery.SelectOption {
	out := make([]delivery.SelectOption, len(values))
	for i, v := range values {
		out[i] = delivery.SelectOption{Label: strings.ToUpper(v[:1]) + v[1:], Value: v}
	}
	return out
}

// componentWantErr checks that err is a ComponentError at pointer.
func componentWantErr(t *testing.T, err error, pointer string) {
	t.Helper()
	var ce *ComponentError
	if !errors.As(err, &ce) || ce.Pointer != pointer {
		t.Fatalf("err %v, want a ComponentError at %s", err, pointer)
	}
}

func TestApprovalCard(t *testing.T) {
	want := []delivery.Component{
		{Type: "button", CustomID: "approval.once", Label: "Allow once", Style: "primary", RequiredCapability: "approve_actions", RestrictedTo: "run_starter"},
		{Type: "button", CustomID: "approval.session", Label: "Allow for this session", Style: "secondary", RequiredCapability: "approve_actions", RestrictedTo: "run_starter"},
		{Type: "button", CustomID: "approval.always", Label: "Always allow", Style: "secondary", RequiredCapability: "approve_actions", RestrictedTo: "owner"},
		{Type: "button", CustomID: "approval.deny", Label: "Deny", Style: "danger", RestrictedTo: "run_starter"},
	}
	if d := cmp.Diff(want, ApprovalCard(true)); d != "" {
		t.Errorf("with always (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]delivery.Component{want[0], want[1], want[3]}, ApprovalCard(false)); d != "" {
		t.Errorf("without always (-want +got):\n%s", d)
	}
	if err := CheckComponents(DefaultSettings(), ApprovalCard(true)); err != nil {
		t.Errorf("the approval card fails its own check: %v", err)
	}
	for id, want := range map[string]string{"approval.once": "once", "approval.session": "session", "approval.always": "always", "approval.deny": "deny",
		"approval.maybe": "", "once": "", "approval.": "", "xapproval.once": ""} {
		got, ok := ApprovalAnswer(id)
		if got != want || ok != (want != "") {
			t.Errorf("ApprovalAnswer(%q) = %q, %v", id, got, ok)
		}
	}
}

func TestButtonSelectForm(t *testing.T) {
	b, err := Button("deploy.go", "Deploy", "")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(delivery.Component{Type: "button", CustomID: "deploy.go", Label: "Deploy", Style: "secondary"}, b); d != "" {
		t.Errorf("Button (-want +got):\n%s", d)
	}
	for _, style := range []string{StylePrimary, StyleSecondary, StyleSuccess, StyleDanger, StyleGhost} {
		if _, err := Button("b", "B", style); err != nil {
			t.Errorf("style %s: %v", style, err)
		}
	}
	s, err := Select("env", "Environment", componentOpts("staging", "production")...)
	if err != nil || s.Type != "select" || len(s.Options) != 2 {
		t.Fatalf("Select: %+v, %v", s, err)
	}
	f, err := Form("deploy.form", "Deploy",
		delivery.FormField{Name: "service", Label: "Service", Type: FieldText, Required: true},
		delivery.FormField{Name: "notes", Label: "Notes", Type: FieldTextarea},
		delivery.FormField{Name: "replicas", Label: "Replicas", Type: FieldNumber},
		delivery.FormField{Name: "dry_run", Label: "Dry run", Type: FieldBoolean},
		delivery.FormField{Name: "env", Label: "Environment", Type: FieldChoice, Choices: componentOpts("staging", "production")},
	)
	if err != nil || f.Type != "form" || len(f.Fields) != 5 {
		t.Fatalf("Form: %+v, %v", f, err)
	}

	cases := []struct {
		name    string
		build   func() (delivery.Component, error)
		pointer string
	}{
		{"style unknown", func() (delivery.Component, error) { return Button("b", "B", "link") }, "/style"},
		{"style in upper case", func() (delivery.Component, error) { return Button("b", "B", "Primary") }, "/style"},
		{"button without label", func() (delivery.Component, error) { return Button("b", "", "") }, "/label"},
		{"label too long", func() (delivery.Component, error) { return Button("b", strings.Repeat("x", ComponentLabelMax+1), "") }, "/label"},
		{"custom id empty", func() (delivery.Component, error) { return Button("", "B", "") }, "/custom_id"},
		{"custom id with a space", func() (delivery.Component, error) { return Button("deploy now", "B", "") }, "/custom_id"},
		{"select without options", func() (delivery.Component, error) { return Select("s", "S") }, "/options"},
		{"select value twice", func() (delivery.Component, error) { return Select("s", "S", componentOpts("a", "a")...) }, "/options/1/value"},
		{"select option without label", func() (delivery.Component, error) {
			return Select("s", "S", delivery.SelectOption{Value: "a"})
		}, "/options/0/label"},
		{"select with too many options", func() (delivery.Component, error) {
			var o []string
			for i := range ComponentOptionsMax + 1 {
				o = append(o, fmt.Sprint("v", i))
			}
			return Select("s", "S", componentOpts(o...)...)
		}, "/options"},
		{"form without fields", func() (delivery.Component, error) { return Form("f", "F") }, "/fields"},
		{"field type unknown", func() (delivery.Component, error) {
			return Form("f", "F", delivery.FormField{Name: "a", Label: "A", Type: "date"})
		}, "/fields/0/type"},
		{"field name twice", func() (delivery.Component, error) {
			return Form("f", "F", delivery.FormField{Name: "a", Label: "A", Type: "text"}, delivery.FormField{Name: "a", Label: "B", Type: "number"})
		}, "/fields/1/name"},
		{"field name in upper case", func() (delivery.Component, error) {
			return Form("f", "F", delivery.FormField{Name: "Service", Label: "A", Type: "text"})
		}, "/fields/0/name"},
		{"field without label", func() (delivery.Component, error) {
			return Form("f", "F", delivery.FormField{Name: "a", Type: "text"})
		}, "/fields/0/label"},
		{"choice field without choices", func() (delivery.Component, error) {
			return Form("f", "F", delivery.FormField{Name: "a", Label: "A", Type: "choice"})
		}, "/fields/0/choices"},
		{"text field with choices", func() (delivery.Component, error) {
			return Form("f", "F", delivery.FormField{Name: "a", Label: "A", Type: "text", Choices: componentOpts("x")})
		}, "/fields/0/choices"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.build()
			componentWantErr(t, err, c.pointer)
		})
	}
}

func TestQuestionCard(t *testing.T) {
	card, err := QuestionCard("q1", componentOpts("yes", "no")...)
	if err != nil {
		t.Fatal(err)
	}
	want := []delivery.Component{
		{Type: "button", CustomID: "q1.yes", Label: "Yes", Style: "secondary"},
		{Type: "button", CustomID: "q1.no", Label: "No", Style: "secondary"},
	}
	if d := cmp.Diff(want, card); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	_, err = QuestionCard("q1")
	componentWantErr(t, err, "/choices")
	_, err = QuestionCard("q1", componentOpts("yes", "yes")...)
	componentWantErr(t, err, "/choices/1/value")
	_, err = QuestionCard("q1", delivery.SelectOption{Label: "Maybe so", Value: "maybe so"})
	componentWantErr(t, err, "/choices/0/custom_id")
}

func TestCheckComponentsLimits(t *testing.T) {
	s := DefaultSettings()
	s.ComponentMaxPerMessage, s.ComponentCustomIDMax, s.ComponentFormMaxFields = 3, 12, 2
	btn := func(id string) delivery.Component {
		return delivery.Component{Type: "button", CustomID: id, Label: "B", Style: "primary"}
	}
	field := func(name string) delivery.FormField { return delivery.FormField{Name: name, Label: "F", Type: "text"} }
	cases := []struct {
		name    string
		cs      []delivery.Component
		pointer string
	}{
		{"within", []delivery.Component{btn("a"), btn("b"), btn("c")}, ""},
		{"none", nil, ""},
		{"too many", []delivery.Component{btn("a"), btn("b"), btn("c"), btn("d")}, "/components"},
		{"custom id at the limit", []delivery.Component{btn(strings.Repeat("a", 12))}, ""},
		{"custom id too long", []delivery.Component{btn("a"), btn(strings.Repeat("a", 13))}, "/components/1/custom_id"},
		{"custom id twice", []delivery.Component{btn("a"), btn("a")}, "/components/1/custom_id"},
		{"form at the limit", []delivery.Component{{Type: "form", CustomID: "f", Fields: []delivery.FormField{field("a"), field("b")}}}, ""},
		{"form with too many fields", []delivery.Component{{Type: "form", CustomID: "f", Fields: []delivery.FormField{field("a"), field("b"), field("c")}}}, "/components/0/fields"},
		{"type unknown", []delivery.Component{{Type: "slider", CustomID: "s"}}, "/components/0/type"},
		{"restricted to someone unknown", []delivery.Component{{Type: "button", CustomID: "b", Label: "B", Style: "primary", RestrictedTo: "everyone"}}, "/components/0/restricted_to"},
		{"capability not a name", []delivery.Component{{Type: "button", CustomID: "b", Label: "B", Style: "primary", RequiredCapability: "Approve Actions"}}, "/components/0/required_capability"},
		{"select with a style", []delivery.Component{{Type: "select", CustomID: "s", Style: "primary", Options: componentOpts("a")}}, "/components/0"},
		{"button with options", []delivery.Component{{Type: "button", CustomID: "b", Label: "B", Style: "primary", Options: componentOpts("a")}}, "/components/0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckComponents(s, c.cs)
			if c.pointer == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			componentWantErr(t, err, c.pointer)
		})
	}
}

func TestCommandSpec(t *testing.T) {
	s := DefaultSettings()
	spec := CommandSpec{Name: "deploy", Description: "Deploy a service", Options: []delivery.CommandOption{
		{Name: "service", Description: "The service", Required: true, Autocomplete: true},
		{Name: "env", Description: "Where", Choices: componentOpts("staging", "production")},
	}}
	reg, err := spec.Register(s)
	if err != nil {
		t.Fatal(err)
	}
	want := delivery.CommandRegister{Name: "deploy", Description: "Deploy a service", Options: spec.Options}
	if d := cmp.Diff(want, reg); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	reg.Options[1].Choices[0].Value = "changed"
	if spec.Options[1].Choices[0].Value != "staging" {
		t.Error("the registration shares the spec's choices")
	}

	manyChoices := func(n int) []delivery.SelectOption {
		var o []string
		for i := range n {
			o = append(o, fmt.Sprint("c", i))
		}
		return componentOpts(o...)
	}
	cases := []struct {
		name    string
		edit    func(*CommandSpec)
		pointer string
	}{
		{"name in upper case", func(c *CommandSpec) { c.Name = "Deploy" }, "/name"},
		{"name with a slash", func(c *CommandSpec) { c.Name = "/deploy" }, "/name"},
		{"name too long", func(c *CommandSpec) { c.Name = strings.Repeat("d", CommandNameMax+1) }, "/name"},
		{"description empty", func(c *CommandSpec) { c.Description = "" }, "/description"},
		{"description too long", func(c *CommandSpec) { c.Description = strings.Repeat("é", s.CommandDescriptionMax+1) }, "/description"},
		{"option name twice", func(c *CommandSpec) { c.Options[1].Name = "service" }, "/options/1/name"},
		{"option description too long", func(c *CommandSpec) { c.Options[0].Description = strings.Repeat("x", s.CommandDescriptionMax+1) }, "/options/0/description"},
		{"choices and autocomplete", func(c *CommandSpec) { c.Options[1].Autocomplete = true }, "/options/1"},
		{"too many choices", func(c *CommandSpec) { c.Options[1].Choices = manyChoices(s.AutocompleteMaxChoices + 1) }, "/options/1/choices"},
		{"empty choices", func(c *CommandSpec) { c.Options[1].Choices = []delivery.SelectOption{} }, "/options/1/choices"},
		{"too many options", func(c *CommandSpec) {
			c.Options = nil
			for i := range CommandOptionsMax + 1 {
				c.Options = append(c.Options, delivery.CommandOption{Name: fmt.Sprint("o", i), Description: "d"})
			}
		}, "/options"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := CommandSpec{Name: spec.Name, Description: spec.Description, Options: append([]delivery.CommandOption(nil), spec.Options...)}
			c.edit(&sp)
			_, err := sp.Register(s)
			componentWantErr(t, err, c.pointer)
		})
	}

	if err := CheckAutocompleteChoices(s, manyChoices(s.AutocompleteMaxChoices)); err != nil {
		t.Errorf("choices at the limit: %v", err)
	}
	componentWantErr(t, CheckAutocompleteChoices(s, manyChoices(s.AutocompleteMaxChoices+1)), "/choices")
	if err := CheckAutocompleteChoices(s, nil); err != nil {
		t.Errorf("no choices: %v", err)
	}
}

package delivery

// CommandRegister declares a command people can invoke in the channels
// an agent serves (registerCommand; updateCommand takes the same body).
// An invocation comes to the agent as command.invoked with the option
// values by name; an option marked Autocomplete is completed through
// command.autocomplete_requested.
type CommandRegister struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Options     []CommandOption `json:"options,omitempty"`
}

// CommandOption is one named value of a command. Choices, when given,
// are the only values allowed; an option has Choices or Autocomplete,
// not both.
type CommandOption struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Required     bool           `json:"required,omitempty"`
	Autocomplete bool           `json:"autocomplete,omitempty"`
	Choices      []SelectOption `json:"choices,omitempty"`
}

package netguard_test

import (
	"errors"
	"fmt"
	"net/http"

	"novaos.dev/novaos/netguard"
)

func Example() {
	var p netguard.Policy // public destinations only
	for _, u := range []string{
		"https://hooks.example.com/a2a",
		"http://[64:ff9b::7f00:1]/",  // NAT64 of 127.0.0.1
		"http://[2002:a9fe:a9fe::]/", // 6to4 of the metadata service
		"http://0177.0.0.1/",         // octal 127.0.0.1
		"http://hooks.example.com:0/",
	} {
		err := p.CheckURL(u)
		var re *netguard.RefusedError
		switch {
		case errors.As(err, &re):
			fmt.Printf("%s: refused, %s\n", u, re.Class)
		case errors.Is(err, netguard.ErrMalformed):
			fmt.Printf("%s: malformed\n", u)
		default:
			fmt.Printf("%s: ok\n", u)
		}
	}

	// At connect time, the address a name resolves to is checked too.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = p.Dialer(nil).DialContext
	_ = &http.Client{Transport: tr}

	// Output:
	// https://hooks.example.com/a2a: ok
	// http://[64:ff9b::7f00:1]/: refused, loopback
	// http://[2002:a9fe:a9fe::]/: refused, metadata
	// http://0177.0.0.1/: malformed
	// http://hooks.example.com:0/: malformed
}

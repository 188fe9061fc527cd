// Package strictjson checks that JSON means one thing to every reader.
//
// encoding/json keeps the last of two members with one name, matches
// names to fields case-insensitively and ignores unknown ones; another
// reader of the same bytes may keep the first value or the exact name. A
// document read by two parties (a client and a server, an SDK and a
// judge) must give no room for that, so [Check] refuses, in one pass,
// anything but one JSON value with no member named twice in one object
// (compared exactly, or case-folded as encoding/json matches them),
// nested no deeper than a bound, with nothing after it, and, when
// [Options.Fields] says so, with no member name but the ones listed.
// [Decode] is Check followed by encoding/json with unknown fields
// refused.
//
//	err := strictjson.Check(body, &strictjson.Options{Object: true, FoldCase: true})
//	var se *strictjson.Error
//	if errors.As(err, &se) && se.Problem == strictjson.Duplicate {
//		// se.Path is "$.verdict", se.Key "verdict"
//	}
//
// A well-formed document whose names are ASCII without escapes takes a
// byte scanner that allocates only for each object's name set; anything
// else, and every refusal, takes a walk through encoding/json's tokens,
// which also says what is wrong and where. The package depends on the
// standard library only, so the public SDK packages can import it.
package strictjson

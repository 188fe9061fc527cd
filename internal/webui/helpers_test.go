package webui_test

import "encoding/base64"

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

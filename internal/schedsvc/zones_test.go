package schedsvc

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/heartbeat"
)

// A schedule takes the zone names of the binary's own database and no
// other, whatever the host's zone directory holds: not its posix/ and
// right/ copies, not names it has from an older or newer database, not
// another spelling. Each refusal says what to give instead.
func TestLoadZone(t *testing.T) {
	unknown := "give an IANA name such as Europe/Berlin or UTC (this server knows the " + zoneDatabase + " database)"
	tests := []struct {
		name string
		want string // in the refusal; "" takes the name
	}{
		{"UTC", ""},
		{"Etc/UTC", ""},
		{"America/Mazatlan", ""},       // a z
		{"Europe/Zurich", ""},          // a Z
		{"Etc/GMT+9", ""},              // a 9
		{"Etc/GMT-10", ""},             // a 0
		{"America/Port-au-Prince", ""}, // a -
		{"Asia/Ho_Chi_Minh", ""},       // a _
		{"US/Eastern", ""},             // a link the database keeps for old names
		{"America/Ciudad_Juarez", ""},  // new in 2022g: hosts with an older database lack it
		{"posix/Europe/Berlin", `time zone "posix/Europe/Berlin" is refused: the posix/ copies of the zone database are not taken ` +
			`(their presence depends on the host, and right/ zones count leap seconds); give "Europe/Berlin"`},
		{"right/UTC", `the right/ copies of the zone database are not taken (their presence depends on the host, and right/ zones count leap seconds); give "UTC"`},
		{"right/Mars/Olympus", "the right/ copies of the zone database are not taken (their presence depends on the host, and right/ zones count leap seconds); give an IANA name such as Europe/Berlin"},
		{"posix/posix/UTC", `the posix/ copies of the zone database are not taken`},
		{"europe/berlin", `unknown time zone "europe/berlin": names are case-sensitive; give "Europe/Berlin"`},
		{"UTC ", unknown},
		{"", unknown},
		{"Local", unknown},
		{"localtime", unknown},
		{"posixrules", unknown},
		{"Factory", unknown},
		{"US/Pacific-New", unknown}, // dropped in 2020b; an older host may still have it
		{"SystemV/EST5", unknown},   // likewise
		{"zone.tab", unknown},       // a file of the zone directory, no zone
		{"leap-seconds.list", unknown},
		{"Mars/Olympus", unknown},
		{"/etc/localtime", unknown},
		{"../UTC", unknown},
		{"Europe/../UTC", unknown},
		{"./UTC", unknown},
		{"Europe/./Berlin", unknown},
		{`Europe\Berlin`, unknown},
		{"Europe/Berlin:", unknown},
		{"Europe/Berlin\x00", unknown},
		{"Europe.Berlin", unknown},
		{strings.Repeat("A", heartbeat.MaxTimezoneLen+1), unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loc, err := loadZone(tc.name)
			switch {
			case tc.want == "" && (err != nil || loc.String() != tc.name):
				t.Errorf("loadZone = %v, %v; want the zone", loc, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("loadZone = %v, %v; want a refusal saying %q", loc, err, tc.want)
			}
		})
	}
}

// Every name of the table loads, as itself.
func TestZoneNamesLoad(t *testing.T) {
	if !slices.IsSorted(zoneNames[:]) {
		t.Fatal("zoneNames is not sorted: loadZone's search misses names")
	}
	for _, name := range zoneNames {
		if loc, err := loadZone(name); err != nil || loc.String() != name {
			t.Errorf("loadZone(%q) = %v, %v", name, loc, err)
		}
	}
}

// The table is the database of the Go toolchain that builds the binary,
// whose time/tzdata the binary embeds: after a Go upgrade that changed it,
// run go generate.
func TestZoneTableMatchesToolchain(t *testing.T) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command to find the toolchain's zone database: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "lib", "time")
	z, err := zip.OpenReader(filepath.Join(dir, "zoneinfo.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		if f.Name != "Factory" {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, zoneNames[:]) {
		t.Errorf("the toolchain's database has %d zones, the table %d: run go generate ./internal/schedsvc", len(names), len(zoneNames))
	}
	script, err := os.ReadFile(filepath.Join(dir, "update.bash"))
	if err != nil {
		t.Fatal(err)
	}
	var version string
	if m := regexp.MustCompile(`(?m)^DATA=(\S+)$`).FindSubmatch(script); m != nil {
		version = string(m[1])
	}
	if version != zoneDatabase {
		t.Errorf("the toolchain's database is %q, the table's %q: run go generate ./internal/schedsvc", version, zoneDatabase)
	}
}

// Whatever this host's zone directory answers, a name is taken or not as
// on any other host: some names the host loads are refused.
func TestZonesDoNotFollowTheHost(t *testing.T) {
	for _, name := range []string{"posix/Europe/Berlin", "right/UTC", "localtime", "posixrules", "Local"} {
		if _, err := time.LoadLocation(name); err != nil {
			continue // not on this host
		}
		if _, err := loadZone(name); err == nil {
			t.Errorf("%q, which this host's zone directory has, is taken", name)
		}
	}
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// errUsage means the usage text has been printed already.
var errUsage = errors.New("usage")

func exitCode(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// newFlagSet returns a FlagSet whose --help prints usage to stderr.
func newFlagSet(env *environment, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "Usage: webhooks %s\n\n%s\n", name, usage)
		if hasFlags(fs) {
			fmt.Fprintln(env.stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args; --help is a success, not an error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return errHelpShown
	}
	if err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return errUsage
	}
	return nil
}

// errHelpShown stops a command after --help; run returns nil for it.
var errHelpShown = errors.New("help shown")

// flagsDone turns the result of parseFlags into what a command returns:
// nil after --help, the error otherwise.
func flagsDone(err error) error {
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

var _ flag.Value = (*stringList)(nil)

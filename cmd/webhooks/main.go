// Command webhooks runs the webhook service: its API, its Temporal worker,
// both together for development, migrations and admin commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gin-gonic/gin"
)

func main() {
	// Gin's mode is process-wide and only decides whether it prints debug
	// lines (routes, warnings) to stdout; the process decides, not the API.
	gin.SetMode(gin.ReleaseMode)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if err != errUsage {
			fmt.Fprintln(os.Stderr, "webhooks:", err)
		}
		os.Exit(exitCode(err))
	}
}

// command is one subcommand of the binary.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *environment, args []string) error
}

// environment is what every command gets from the process.
type environment struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

func commands() []command {
	return []command{
		{"dev", "run everything on one machine: Temporal dev server, migrations, API and worker", runDev},
		{"serve", "run the HTTP API", runServe},
		{"worker", "run the Temporal worker that delivers webhooks", runWorker},
		{"migrate", "apply database migrations and exit", runMigrate},
		{"accounts", "manage accounts (accounts create)", runAccounts},
		{"users", "manage users (users create)", runUsers},
		{"service-tokens", "manage service tokens (service-tokens create)", runServiceTokens},
		{"secrets", "re-encrypt webhook secrets with the primary key (secrets reencrypt)", runSecrets},
		{"emit", "send one job-run event to the ingestion endpoint", runEmit},
		{"simulate", "simulate job runs (started, then completed or errored) for demos", runSimulate},
		{"listen", "receive a webhook's deliveries here, without an inbound port, and forward them to a local URL", runListen},
		{"healthcheck", "exit 0 if this host's process is ready (container health checks)", runHealthcheck},
	}
}

// run is the whole program; main only supplies the process's environment,
// so tests can start the real program in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	env := &environment{getenv: getenv, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	printUsage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: webhooks <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'webhooks <command> --help' for a command's flags.")
	fmt.Fprintln(w, "Configuration comes from environment variables; see README.md.")
}

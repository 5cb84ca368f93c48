// Package composecheck loads docker-compose.yml with the Compose
// specification's own Go loader, so CI can check the topology without Docker.
package composecheck

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// Load reads the compose file at path as `docker compose --profile '*'
// config` does: interpolation from environ (what the shell or an .env file
// supplies), merge keys and extends, schema validation, normalization, and
// paths resolved against the file's directory. Every profile is enabled, so
// optional services are checked too.
func Load(ctx context.Context, path string, environ map[string]string) (*types.Project, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{{Filename: abs}},
		Environment: types.Mapping(maps.Clone(environ)), // the loader adds to it
	}
	p, err := loader.LoadWithContext(ctx, details, func(o *loader.Options) {
		o.Profiles = []string{"*"}
		o.ResolvePaths = true
	})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return p, nil
}

// Environment returns a service's environment with unset values left out.
func Environment(s types.ServiceConfig) map[string]string {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// HostPort is one port a service publishes on the host.
type HostPort struct {
	IP   string
	Port int
}

// PublishedPorts returns the host ports a service publishes. Ports without
// a published part get a random host port and are left out.
func PublishedPorts(ports []types.ServicePortConfig) ([]HostPort, error) {
	var out []HostPort
	for _, p := range ports {
		if p.Published == "" {
			continue
		}
		n, err := strconv.Atoi(p.Published)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %s:%d: published port must be one number 1-65535", p.Published, p.Target)
		}
		ip := p.HostIP
		if ip == "" {
			ip = "0.0.0.0"
		}
		out = append(out, HostPort{IP: ip, Port: n})
	}
	return out, nil
}

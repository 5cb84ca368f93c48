// Package composecheck reads docker-compose.yml the way Docker Compose does
// (variable interpolation, YAML merge keys) so CI can check the production
// topology without a Docker engine.
package composecheck

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// File is the part of a compose file the checks read.
type File struct {
	Name     string             `yaml:"name"`
	Services map[string]Service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

// Service is one compose service.
type Service struct {
	Image         string            `yaml:"image"`
	ContainerName string            `yaml:"container_name"`
	Command       []string          `yaml:"command"`
	Environment   map[string]string `yaml:"environment"`
	Ports         []string          `yaml:"ports"`
	Expose        []string          `yaml:"expose"`
	Volumes       []string          `yaml:"volumes"`
	Profiles      []string          `yaml:"profiles"`
	DependsOn     map[string]any    `yaml:"depends_on"`
}

// Load reads path, interpolates ${VAR} forms with getenv, and decodes it.
func Load(path string, getenv func(string) string) (File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("read compose file: %w", err)
	}
	text, err := Interpolate(string(raw), getenv)
	if err != nil {
		return File{}, fmt.Errorf("interpolate %s: %w", path, err)
	}
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(text), &node); err != nil {
		return File{}, fmt.Errorf("parse %s: %w", path, err)
	}
	normalizeDependsOn(&node)
	var f File
	if err := node.Decode(&f); err != nil {
		return File{}, fmt.Errorf("decode %s: %w", path, err)
	}
	return f, nil
}

// normalizeDependsOn turns the short list form of depends_on into the map
// form, so both decode into Service.DependsOn.
func normalizeDependsOn(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "depends_on" && v.Kind == yaml.SequenceNode {
				m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				for _, item := range v.Content {
					m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: item.Value},
						&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
				}
				n.Content[i+1] = m
			}
		}
	}
	for _, c := range n.Content {
		normalizeDependsOn(c)
	}
}

var variable = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// Interpolate applies Compose's substitution rules: $$ is a literal $,
// ${VAR:-default} and ${VAR-default} give defaults, ${VAR:?message} and
// ${VAR?message} make the variable required.
func Interpolate(text string, getenv func(string) string) (string, error) {
	var errs []string
	out := variable.ReplaceAllStringFunc(text, func(m string) string {
		if m == "$$" {
			return "$"
		}
		sub := variable.FindStringSubmatch(m)
		name, op, arg := sub[1], sub[2], sub[3]
		if name == "" {
			name = sub[4]
		}
		value := getenv(name)
		switch op {
		case ":-", "-": // getenv cannot tell unset from empty; both use the default
			if value == "" {
				return arg
			}
		case ":?", "?":
			if value == "" {
				errs = append(errs, fmt.Sprintf("required variable %s is missing a value: %s", name, arg))
			}
		}
		return value
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// HostPort is one port a service publishes on the host.
type HostPort struct {
	IP   string
	Port int
}

// PublishedPorts parses the short port syntax ("[ip:]host:container[/proto]").
// Ports without a host part are published on random host ports and are
// left out.
func PublishedPorts(specs []string) ([]HostPort, error) {
	var out []HostPort
	for _, spec := range specs {
		spec = strings.SplitN(spec, "/", 2)[0]
		parts := strings.Split(spec, ":")
		var ip, host string
		switch len(parts) {
		case 1:
			continue
		case 2:
			host = parts[0]
		case 3:
			ip, host = parts[0], parts[1]
		default:
			return nil, fmt.Errorf("port %q: unsupported syntax", spec)
		}
		p, err := strconv.Atoi(host)
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("port %q: host port must be a number 1-65535", spec)
		}
		if ip == "" {
			ip = "0.0.0.0"
		}
		out = append(out, HostPort{IP: ip, Port: p})
	}
	return out, nil
}

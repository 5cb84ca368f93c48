package composecheck_test

// deploy/kubernetes read as kustomize reads it, into the part of the
// Kubernetes object model that the manifests use, decoded strictly (yaml
// KnownFields): a misspelt field such as readOnlyRootFileSystem fails the
// test instead of being ignored by the checks and then accepted by the
// cluster with its default. A field the manifests start to use needs a
// field here. This keeps k8s.io/api and its dependencies out of go.mod; the
// names and shapes follow the Kubernetes API reference.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// kubernetesManifests is deploy/kubernetes as kustomize sees it: the
// kustomization and every resource it lists, each decoded strictly.
type kubernetesManifests struct {
	Kustomization kKustomization
	Namespaces    []kNamespace
	ConfigMaps    map[string]kConfigMap
	Deployments   map[string]kDeployment
	Jobs          map[string]kJob
	Services      map[string]kService
	PDBs          map[string]kPodDisruptionBudget
}

// decodeStrict decodes the single YAML document in b into v, refusing
// fields v does not have.
func decodeStrict(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return err
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document: keep one object a file")
	}
	return nil
}

func loadKubernetes(t *testing.T) kubernetesManifests {
	t.Helper()
	m := kubernetesManifests{ConfigMaps: map[string]kConfigMap{}, Deployments: map[string]kDeployment{},
		Jobs: map[string]kJob{}, Services: map[string]kService{}, PDBs: map[string]kPodDisruptionBudget{}}
	b, err := os.ReadFile(filepath.Join(kubernetesDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := decodeStrict(b, &m.Kustomization); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	for _, res := range m.Kustomization.Resources {
		b, err := os.ReadFile(filepath.Join(kubernetesDir, res))
		if err != nil {
			t.Fatalf("kustomization resource %s: %v", res, err)
		}
		var head struct {
			Kind string `yaml:"kind"`
		}
		if err := yaml.Unmarshal(b, &head); err != nil {
			t.Fatalf("%s: %v", res, err)
		}
		decode := func(v any) {
			if err := decodeStrict(b, v); err != nil {
				t.Fatalf("%s: %v", res, err)
			}
		}
		switch head.Kind {
		case "Namespace":
			var o kNamespace
			decode(&o)
			m.Namespaces = append(m.Namespaces, o)
		case "ConfigMap":
			var o kConfigMap
			decode(&o)
			m.ConfigMaps[o.Metadata.Name] = o
		case "Deployment":
			var o kDeployment
			decode(&o)
			m.Deployments[o.Metadata.Name] = o
		case "Job":
			var o kJob
			decode(&o)
			m.Jobs[o.Metadata.Name] = o
		case "Service":
			var o kService
			decode(&o)
			m.Services[o.Metadata.Name] = o
		case "PodDisruptionBudget":
			var o kPodDisruptionBudget
			decode(&o)
			m.PDBs[o.Metadata.Name] = o
		default:
			t.Fatalf("%s: kind %q is not modelled in kubernetes_model_test.go (a Secret must never be committed)", res, head.Kind)
		}
	}
	return m
}

// pods are the pod templates of every workload, by workload name.
func (m kubernetesManifests) pods() map[string]kPodSpec {
	out := map[string]kPodSpec{}
	for name, d := range m.Deployments {
		out[name] = d.Spec.Template.Spec
	}
	for name, j := range m.Jobs {
		out[name] = j.Spec.Template.Spec
	}
	return out
}

type kObject struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Metadata   kObjectMeta `yaml:"metadata"`
}

type kObjectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type kKustomization struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Namespace  string   `yaml:"namespace"`
	Resources  []string `yaml:"resources"`
	Images     []struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
		Digest  string `yaml:"digest"`
	} `yaml:"images"`
}

type kNamespace struct {
	kObject `yaml:",inline"`
}

type kConfigMap struct {
	kObject `yaml:",inline"`
	Data    map[string]string `yaml:"data"`
}

type kDeployment struct {
	kObject `yaml:",inline"`
	Spec    struct {
		Replicas *int           `yaml:"replicas"`
		Selector kLabelSelector `yaml:"selector"`
		Strategy *struct {
			Type          string `yaml:"type"`
			RollingUpdate *struct {
				MaxSurge       string `yaml:"maxSurge"`
				MaxUnavailable string `yaml:"maxUnavailable"`
			} `yaml:"rollingUpdate"`
		} `yaml:"strategy"`
		Template kPodTemplate `yaml:"template"`
	} `yaml:"spec"`
}

type kJob struct {
	kObject `yaml:",inline"`
	Spec    struct {
		BackoffLimit            *int         `yaml:"backoffLimit"`
		ActiveDeadlineSeconds   *int         `yaml:"activeDeadlineSeconds"`
		TTLSecondsAfterFinished *int         `yaml:"ttlSecondsAfterFinished"`
		Template                kPodTemplate `yaml:"template"`
	} `yaml:"spec"`
}

type kService struct {
	kObject `yaml:",inline"`
	Spec    struct {
		Type     string            `yaml:"type"`
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"` // a name or a number
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type kPodDisruptionBudget struct {
	kObject `yaml:",inline"`
	Spec    struct {
		MinAvailable   string         `yaml:"minAvailable"`
		MaxUnavailable string         `yaml:"maxUnavailable"`
		Selector       kLabelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type kLabelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type kPodTemplate struct {
	Metadata kObjectMeta `yaml:"metadata"`
	Spec     kPodSpec    `yaml:"spec"`
}

type kPodSpec struct {
	RestartPolicy                 string `yaml:"restartPolicy"`
	AutomountServiceAccountToken  *bool  `yaml:"automountServiceAccountToken"`
	TerminationGracePeriodSeconds *int   `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               *struct {
		RunAsNonRoot   *bool  `yaml:"runAsNonRoot"`
		RunAsUser      *int64 `yaml:"runAsUser"`
		RunAsGroup     *int64 `yaml:"runAsGroup"`
		SeccompProfile *struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []kContainer `yaml:"containers"`
}

type kContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	EnvFrom []struct {
		ConfigMapRef *kNameRef `yaml:"configMapRef"`
		SecretRef    *kNameRef `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef    *kKeyRef `yaml:"secretKeyRef"`
			ConfigMapKeyRef *kKeyRef `yaml:"configMapKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	LivenessProbe  *kProbe `yaml:"livenessProbe"`
	ReadinessProbe *kProbe `yaml:"readinessProbe"`
	StartupProbe   *kProbe `yaml:"startupProbe"`
	Lifecycle      *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             *struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type kNameRef struct {
	Name string `yaml:"name"`
}

type kKeyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type kProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"` // a name or a number
	} `yaml:"httpGet"`
	InitialDelaySeconds int `yaml:"initialDelaySeconds"`
	PeriodSeconds       int `yaml:"periodSeconds"`
	TimeoutSeconds      int `yaml:"timeoutSeconds"`
	FailureThreshold    int `yaml:"failureThreshold"`
}

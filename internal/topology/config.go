package topology

import (
	"time"

	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

func registerRequest(namespace string, retention time.Duration) *workflowservice.RegisterNamespaceRequest {
	return &workflowservice.RegisterNamespaceRequest{
		Namespace:                        namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention),
	}
}

func updateRetentionRequest(namespace string, retention time.Duration) *workflowservice.UpdateNamespaceRequest {
	return &workflowservice.UpdateNamespaceRequest{
		Namespace: namespace,
		Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)},
	}
}

// serverConfig is a single-process Temporal cluster on PostgreSQL: all four
// services in one binary, persistence and visibility on PostgreSQL 12+.
const serverConfig = `log:
  stdout: true
  level: warn

persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: {{.T.HistoryShards}}
  datastores:
    default:
      sql:
        pluginName: {{.T.SQLPlugin}}
        databaseName: {{.DB}}
        connectAddr: "{{.PG.Host}}:{{.PG.Port}}"
        connectProtocol: tcp
        user: {{.PG.User}}
        password: "{{.PG.Password}}"
        maxConns: {{.T.PersistenceMaxConns}}
        maxIdleConns: {{.T.PersistenceMaxConns}}
        maxConnLifetime: 1h{{if .T.AsyncCommit}}
        connectAttributes:
          synchronous_commit: "off"{{end}}
    visibility:
      sql:
        pluginName: {{.T.SQLPlugin}}
        databaseName: {{.VisDB}}
        connectAddr: "{{.PG.Host}}:{{.PG.Port}}"
        connectProtocol: tcp
        user: {{.PG.User}}
        password: "{{.PG.Password}}"
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1{{if .T.PprofPort}}
  pprof:
    port: {{.T.PprofPort}}
    host: 127.0.0.1{{end}}

services:
  frontend:
    rpc:
      grpcPort: {{.Frontend}}
      membershipPort: {{.FrontendMember}}
      bindOnLocalHost: true
      httpPort: {{.FrontendHTTP}}
  matching:
    rpc:
      grpcPort: {{.Matching}}
      membershipPort: {{.MatchingMember}}
      bindOnLocalHost: true
  history:
    rpc:
      grpcPort: {{.History}}
      membershipPort: {{.HistoryMember}}
      bindOnLocalHost: true
  worker:
    rpc:
      grpcPort: {{.Worker}}
      membershipPort: {{.WorkerMember}}
      bindOnLocalHost: true

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{.Frontend}}"

dcRedirectionPolicy:
  policy: noop

dynamicConfigClient:
  filepath: {{.DynamicConfig}}
  pollInterval: 10s
`

// dynamicConfig carries the matching partitions and lifts the default
// per-namespace rate limits, which a delivery burst would otherwise hit.
// It leaves system.forceSearchAttributesCacheRefreshOnRead off (Temporal:
// "should not be turned on in production"): on, every workflow start and
// workflow task reads the namespace and cluster metadata from PostgreSQL
// under one global lock. Fairness is on as in deploy/: lanes' tasks carry
// their account as fairness key.
const dynamicConfig = `matching.numTaskqueueReadPartitions:
  - value: {{.T.TaskQueuePartitions}}
matching.numTaskqueueWritePartitions:
  - value: {{.T.TaskQueuePartitions}}
frontend.namespaceRPS:
  - value: 10000
frontend.rps:
  - value: 10000
system.enableEagerWorkflowStart:
  - value: true
matching.enableFairness:
  - value: true
system.namespaceCacheRefreshInterval:
  - value: 2s
`

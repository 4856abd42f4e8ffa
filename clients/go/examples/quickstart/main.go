// Quickstart: load examples/cluster.json through Sync, ask Preempt for examples/pod.json,
// print the decision, then follow WatchNominations for a while.
//
//	cd clients/go && go run ./examples/quickstart -addr 127.0.0.1:50051
//
// Against `preemptd serve --tls-cert ... --authz ...`: add `-ca-cert ca.crt -token-file
// writer.token`.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"

	preemptd "github.com/preemptd/preemptd/clients/go"
	pb "github.com/preemptd/preemptd/clients/go/gen/preemptd/v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "preemptd gRPC address")
	clusterFile := flag.String("cluster", "../../examples/cluster.json", "a `kubectl get -o json` List")
	podFile := flag.String("pod", "../../examples/pod.json", "the pod that failed scheduling")
	follow := flag.Duration("follow", 2*time.Second, "how long to follow WatchNominations")
	caCert := flag.String("ca-cert", "", "TLS: the CA that signed the server's certificate")
	tokenFile := flag.String("token-file", "", "a bearer token for `serve --authz`")
	flag.Parse()

	var creds credentials.TransportCredentials // nil: plaintext
	if *caCert != "" {
		pem, err := os.ReadFile(*caCert)
		if err != nil {
			log.Fatal(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			log.Fatalf("%s: no PEM certificate", *caCert)
		}
		creds = credentials.NewTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	}
	var token string
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			log.Fatal(err)
		}
		token = strings.TrimSpace(string(b))
	}

	client, err := preemptd.Dial(*addr, preemptd.Options{
		TransportCredentials: creds,
		Token:                token,
		CallTimeout:          10 * time.Second,
		OnEpochChange: func(previous, current string) {
			log.Printf("server restarted (epoch %s -> %s): push the cluster state again", previous, current)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	cluster, err := os.ReadFile(*clusterFile)
	if err != nil {
		log.Fatal(err)
	}
	report, err := client.SyncList(ctx, cluster, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("loaded %d nodes, %d pods, %d budgets (%d rejected)\n",
		report.GetApplied().GetNodes(), report.GetApplied().GetPods(), report.GetApplied().GetPdbs(), report.GetRejected())

	pod, err := os.ReadFile(*podFile)
	if err != nil {
		log.Fatal(err)
	}
	decision, err := client.PreemptJSON(ctx, pod, preemptd.PreemptOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("decision: %s node=%s victims=%v\n  %s\n",
		decision.GetOutcome(), decision.GetNominatedNodeName(), podNames(decision.GetVictims()), decision.GetMessage())

	watchCtx, cancel := context.WithTimeout(ctx, *follow)
	defer cancel()
	err = client.WatchNominations(watchCtx, 0, preemptd.WatchHandler{
		Event: func(e *pb.WatchNominationsResponse) error {
			fmt.Printf("revision %d: %s %s/%s on %s (initial=%t)\n",
				e.GetRevision(), e.GetType(), e.GetPod().GetNamespace(), e.GetPod().GetName(), e.GetNode(), e.GetInitial())
			return nil
		},
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		log.Fatal(err)
	}
}

func podNames(refs []*pb.PodRef) []string {
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		names = append(names, r.GetNamespace()+"/"+r.GetName())
	}
	return names
}

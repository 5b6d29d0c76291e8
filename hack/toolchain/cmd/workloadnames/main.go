// Command workloadnames generates test vectors for src/jobframework/naming.rs
// from Kueue's own naming function, so the Rust port is checked against the
// real thing rather than against our reading of it.
//
//	go run ./cmd/workloadnames > ../../src/jobframework/testdata/workload_names.json
package main

import (
	"encoding/json"
	"log"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

type vector struct {
	Kind     string `json:"kind"`
	Group    string `json:"group"`
	Version  string `json:"version"`
	Name     string `json:"name"`
	UID      string `json:"uid"`
	Expected string `json:"expected"`
}

func main() {
	// Kueue keeps 253-6 = 247 bytes of "<kind>-<name>"; with "job-" in front,
	// name byte 242 is the last one kept. These two land a separator there,
	// pinning that Kueue does not trim it.
	endsWithDash := strings.Repeat("a", 242) + "-" + strings.Repeat("b", 10)
	endsWithDot := strings.Repeat("a", 242) + "." + strings.Repeat("b", 10)

	cases := []vector{
		{Kind: "Job", Group: "batch", Version: "v1", Name: "name", UID: "uid"},
		{Kind: "Job", Group: "batch", Version: "v1", Name: "name", UID: "another-uid"},
		{Kind: "ExternalJob", Group: "kueue-ext.dev", Version: "v1alpha1", Name: "train-llm", UID: "0f8e6c1a-3b2d-4c5e-9f7a-1b2c3d4e5f60"},
		{Kind: "WrappedJob", Group: "kueue-ext.dev", Version: "v1alpha1", Name: "nightly-etl", UID: "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"},
		// Same name and UID as the WrappedJob: only the Kind tells them apart.
		{Kind: "ExternalJob", Group: "kueue-ext.dev", Version: "v1alpha1", Name: "nightly-etl", UID: "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"},
		{Kind: "ExternalJob", Group: "kueue-ext.dev", Version: "v1alpha1", Name: "v1.2.3-run.42", UID: "uid-1"},
		{Kind: "WrappedJob", Group: "kueue-ext.dev", Version: "v1alpha1", Name: "0day.9.batch-07", UID: "uid-2"},
		{Kind: "MPIJob", Group: "kubeflow.org", Version: "v2beta1", Name: "pi", UID: "uid-3"},
		{Kind: "JobSet", Group: "jobset.x-k8s.io", Version: "v1alpha2", Name: "sleep-set", UID: "uid-4"},
		{Kind: "Pod", Group: "", Version: "v1", Name: "my-pod", UID: "uid-5"},
		{Kind: "Job", Group: "batch", Version: "v1", Name: strings.Repeat("segment-", 32) + "tail", UID: "uid-6"},
		{Kind: "ExternalJob", Group: "kueue-ext.dev", Version: "v1alpha1", Name: strings.Repeat("x", 260), UID: "uid-7"},
		{Kind: "Job", Group: "batch", Version: "v1", Name: endsWithDash, UID: "uid-8"},
		{Kind: "Job", Group: "batch", Version: "v1", Name: endsWithDot, UID: "uid-9"},
	}
	for i := range cases {
		c := &cases[i]
		gvk := schema.GroupVersionKind{Group: c.Group, Version: c.Version, Kind: c.Kind}
		c.Expected = jobframework.GetWorkloadNameForOwnerWithGVK(c.Name, types.UID(c.UID), gvk)
	}

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cases); err != nil {
		log.Fatal(err)
	}
}

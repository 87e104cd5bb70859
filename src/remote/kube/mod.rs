//! Kubernetes pods as places of JVMs: the pods of a namespace that match a label selector,
//! followed through the user's own kubectl (a list, then a watch), each running container
//! reached as `--exec` reaches one (`kubectl exec -i`), its debugger port kept by the
//! workload the pod belongs to, so that a rollout's new pod takes the port of the pod it
//! replaces. This folder holds the pure tables the daemon's pod source stands on:
//!
//! - [`pod`]: a pod (a list's item, a watch event's object) read into the fields used: name,
//!   uid, phase, containers and whether each runs, labels, the controller owner, and the
//!   [`pod::Workload`] (a Deployment from its ReplicaSet's name less `-<pod-template-hash>`,
//!   a StatefulSet, else the pod itself). Pure; sizes bounded; odd input an error, never a
//!   panic.
//! - [`workloads`]: each (namespace, workload, container) slot's stable index: replicas take
//!   slots in order, a rollout's new pod ends in the replaced pod's slot, a pod with a
//!   debugger attached is never moved. Pure table.
//!
//! - [`spec`]: `--kube NAMESPACE[:SELECTOR]` read, and kubectl's words for it. Pure.
//! - [`hosts`]: which pod containers have an exec host now, and the key their JVMs' ports
//!   are kept by (namespace, workload, slot, container). Pure table over [`workloads`].
//! - [`rest`]: containers whose far side lists no JVM for a while have their exec ended, and
//!   are looked at again now and then. Pure table.
//!
//! What the API server sends and kubectl asks is in the test kit's stand-in server
//! (testkit/src/kube/), which the tests run the real kubectl against.

pub mod hosts;
pub mod pod;
pub mod rest;
pub mod spec;
pub mod watch;
pub mod workloads;

pub use pod::{Pod, PodError, WatchEvent, Workload};
pub use spec::KubeSpec;
pub use workloads::{SlotKey, Workloads};

//! Decoding of Kubernetes JSON/YAML objects into the model (being written).

//! What reading one `upsert_json`/`pod_json` document costs, for documents at and past
//! the bounds `parse_document` enforces: refused hostile nesting (the cost of the
//! pre-scan or serde_json's recursion limit), the deepest YAML still read, and the
//! largest JSON read on an async thread (32 KiB).
//! Run: `cargo bench --bench documents` (divan prints median and spread per case).

use std::sync::LazyLock;

use preemptd::model::decode::{MAX_YAML_NESTING, parse_document};

fn main() {
    divan::main();
}

/// `depth` block mappings, each indented one column more than the last.
fn block_yaml(depth: usize) -> String {
    let mut text = String::new();
    for column in 0..depth {
        text.push_str(&" ".repeat(column));
        text.push_str("a:\n");
    }
    text
}

/// `count` copies of a flow collection nested `depth` deep, as one YAML document.
fn flow_yaml(depth: usize, count: usize) -> String {
    let one = "[".repeat(depth) + &"]".repeat(depth);
    format!("a: [{}]\n", vec![one; count].join(", "))
}

/// A JSON pod padded with labels to about `bytes`.
fn json_pod(bytes: usize) -> String {
    let mut labels = Vec::new();
    let mut size = 0;
    while size < bytes {
        let label = format!("\"label-{}\": \"value-{}\"", labels.len(), labels.len());
        size += label.len() + 1;
        labels.push(label);
    }
    format!(
        r#"{{"kind":"Pod","metadata":{{"name":"p","namespace":"default","labels":{{{}}}}},"spec":{{"containers":[{{"name":"app"}}]}}}}"#,
        labels.join(",")
    )
}

static HOSTILE_BLOCK: LazyLock<String> = LazyLock::new(|| block_yaml(400));
static HOSTILE_FLOW: LazyLock<String> = LazyLock::new(|| "a: ".to_string() + &"[".repeat(200_000));
static HOSTILE_JSON: LazyLock<String> = LazyLock::new(|| "[".repeat(200_000));
// The deepest accepted: the pre-scan counts one level for `a:` plus the brackets.
static DEEPEST_FLOW_32K: LazyLock<String> =
    LazyLock::new(|| flow_yaml(MAX_YAML_NESTING - 2, 32 * 1024 / (2 * MAX_YAML_NESTING)));
static DEEPEST_BLOCK: LazyLock<String> = LazyLock::new(|| block_yaml(MAX_YAML_NESTING));
static JSON_32K: LazyLock<String> = LazyLock::new(|| json_pod(32 * 1024));

#[divan::bench(sample_count = 20)]
fn refused_yaml_block_400_deep() -> bool {
    parse_document(&HOSTILE_BLOCK).is_err()
}

#[divan::bench(sample_count = 20)]
fn refused_yaml_flow_200k_deep() -> bool {
    parse_document(&HOSTILE_FLOW).is_err()
}

#[divan::bench(sample_count = 20)]
fn refused_json_200k_deep() -> bool {
    parse_document(&HOSTILE_JSON).is_err()
}

#[divan::bench(sample_count = 20)]
fn deepest_yaml_flow_32k() -> bool {
    parse_document(&DEEPEST_FLOW_32K).is_ok()
}

#[divan::bench(sample_count = 20)]
fn deepest_yaml_block() -> bool {
    parse_document(&DEEPEST_BLOCK).is_ok()
}

#[divan::bench(sample_count = 20)]
fn json_pod_32k_inline() -> bool {
    parse_document(&JSON_32K).is_ok()
}

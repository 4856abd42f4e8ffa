//! The library's layers import only downwards (model → cache → engine / nominations → app
//! → server and kubernetes; cli on top), the core knows no transport crate, and the
//! engine's modules depend on each other in layers: no module reaches, directly or through
//! others, back to itself. Read from the sources, so a new import that breaks a layer fails
//! here rather than in review.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The engine's modules (`engine/x.rs` or `engine/x/mod.rs`; `mod` is `engine/mod.rs`)
/// and the other engine modules each one names.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The file's source without its trailing `#[cfg(test)] mod tests` (where `super` means
/// the file's own module) and without comments.
fn code_of(source: &str) -> String {
    let end = source
        .find("#[cfg(test)]\nmod tests")
        .unwrap_or(source.len());
    source[..end]
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn ident_at(text: &str) -> &str {
    let end = text.find(|c: char| !is_ident_char(c)).unwrap_or(text.len());
    &text[..end]
}

/// The first names of the paths that start with `prefix` in `code`: `a` of `prefix a::b`, and
/// `a`, `b` of `prefix {a::x, b}`.
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        // `x::a` after `y::` or `my_a::` is a path inside another module.
        let inside_other_path = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| is_ident_char(c) || c == ':');
        rest = &rest[at + prefix.len()..];
        if inside_other_path {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && is_ident_char(c) => {
                        names.push(ident_at(&group[i..]).to_string());
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(ident_at(rest).to_string());
        }
    }
    names
}

fn engine_graph(engine: &Path) -> Graph {
    let mut modules = BTreeMap::new();
    for entry in fs::read_dir(engine).expect("read src/engine") {
        let path = entry.expect("read src/engine entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if path.extension().is_some_and(|e| e == "rs") {
            modules.insert(
                stem.to_string(),
                fs::read_to_string(&path).expect("read module"),
            );
        } else if path.join("mod.rs").is_file() {
            let source = fs::read_to_string(path.join("mod.rs")).expect("read module");
            modules.insert(stem.to_string(), source);
        }
    }
    let names: BTreeSet<String> = modules.keys().filter(|m| *m != "mod").cloned().collect();
    let mut graph = Graph::new();
    for (module, source) in &modules {
        let code = code_of(source);
        let mut named = names_after(&code, "crate::engine::");
        if module == "mod" {
            // The root names its children by their own names.
            for child in &names {
                let declared = names_after(&code, &format!("{child}::"));
                if !declared.is_empty() {
                    named.push(child.clone());
                }
            }
        } else {
            named.extend(names_after(&code, "super::"));
        }
        let edges = graph.entry(module.clone()).or_default();
        for name in named {
            // A name that is no module is an item of the engine's root (`engine/mod.rs`).
            let target = if names.contains(&name) {
                name
            } else {
                "mod".to_string()
            };
            if &target != module {
                edges.insert(target);
            }
        }
    }
    graph
}

/// A circle in `graph`, as the modules along it, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        graph: &Graph,
        module: &str,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(module) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = path.iter().position(|m| m == module).unwrap_or(0);
                let mut cycle = path[from..].to_vec();
                cycle.push(module.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(module.to_string(), Mark::Open);
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(graph, next, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(module.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|module| visit(graph, module, &mut marks, &mut Vec::new()))
}

#[test]
fn engine_modules_form_no_cycle() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let graph = engine_graph(&engine);
    for module in ["mod", "filters", "filter_pass", "search", "pick", "victims"] {
        assert!(
            graph.contains_key(module),
            "engine module {module} not found"
        );
    }
    // The reader sees the imports it must: the root uses the phases.
    assert!(graph["mod"].contains("search"), "{graph:?}");
    assert!(graph["search"].contains("filter_pass"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "engine modules import each other in a circle: {}",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn a_circle_is_found() {
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .into_iter()
        .map(|(from, to)| (from.to_string(), BTreeSet::from([to.to_string()])))
        .collect();
    assert_eq!(
        find_cycle(&graph),
        Some(["a", "b", "c", "a"].map(String::from).to_vec())
    );
    let layered: Graph = [("a", "b"), ("b", "c"), ("d", "a")]
        .into_iter()
        .map(|(from, to)| (from.to_string(), BTreeSet::from([to.to_string()])))
        .collect();
    assert_eq!(find_cycle(&layered), None);
}

#[test]
fn imports_are_read_from_paths_and_groups() {
    let code = code_of(
        "use super::{bounds, filters::{self, Code}, pick::SHIFT};\n\
         use crate::engine::search::Found; // super::ignored\n\
         fn f() { super::policy::strict(); my_super::x(); }\n\
         #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::victims;\n}\n",
    );
    let mut names = names_after(&code, "super::");
    names.extend(names_after(&code, "crate::engine::"));
    assert_eq!(names, ["bounds", "filters", "pick", "policy", "search"]);
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("source directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The library's top-level module a source file belongs to (`src/app/x.rs` → `app`,
/// `src/simulate.rs` → `simulate`).
fn top_module(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("under src");
    let first = relative
        .components()
        .next()
        .expect("a path")
        .as_os_str()
        .to_string_lossy()
        .to_string();
    first.trim_end_matches(".rs").to_string()
}

/// What each layer may not name: modules of this crate above it, and transport crates.
fn forbidden(layer: &str) -> Vec<&'static str> {
    const TRANSPORT: [&str; 8] = [
        "tonic::",
        "tonic_health::",
        "tonic_reflection::",
        "prost::",
        "axum::",
        "hyper::",
        "kube::",
        "k8s_openapi::",
    ];
    let above: &[&str] = match layer {
        "model" => &[
            "cache",
            "engine",
            "nominations",
            "app",
            "kubernetes",
            "simulate",
            "plan_drain",
        ],
        "cache" => &[
            "engine",
            "nominations",
            "app",
            "kubernetes",
            "simulate",
            "plan_drain",
        ],
        "engine" | "nominations" => &[
            "app",
            "kubernetes",
            "simulate",
            "plan_drain",
            "nominations",
            "engine",
        ],
        "ops" | "app" => &["app", "kubernetes", "simulate", "plan_drain"],
        "kubernetes" | "simulate" | "plan_drain" => &[],
        _ => return Vec::new(),
    };
    let mut names: Vec<&'static str> = above
        .iter()
        .filter(|name| **name != layer)
        .map(|name| match *name {
            "cache" => "crate::cache",
            "engine" => "crate::engine",
            "nominations" => "crate::nominations",
            "app" => "crate::app",
            "kubernetes" => "crate::kubernetes",
            "simulate" => "crate::simulate",
            "plan_drain" => "crate::plan_drain",
            _ => unreachable!("listed above"),
        })
        .collect();
    // Only the server and the command line (another crate) name the server.
    names.push("crate::server");
    if matches!(layer, "model" | "cache" | "engine" | "nominations" | "app") {
        names.extend(TRANSPORT);
    }
    names
}

/// `(file, name)` for every forbidden name a layer's code uses.
fn layer_violations(src: &Path) -> Vec<(String, &'static str)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let layer = top_module(src, &file);
        let code = code_of(&fs::read_to_string(&file).expect("source file"));
        for name in forbidden(&layer) {
            let used = code.match_indices(name).any(|(at, _)| {
                !code[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| is_ident_char(c) || c == ':')
            });
            if used {
                found.push((file.display().to_string(), name));
            }
        }
    }
    found
}

#[test]
fn layers_import_only_downwards_and_the_core_knows_no_transport() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let violations = layer_violations(&src);
    assert!(
        violations.is_empty(),
        "imports against the layers (model → cache → engine / nominations → app → server, kubernetes): {violations:#?}"
    );
    // The reader sees what it must: the layers exist and the server uses the core.
    for layer in ["model", "cache", "engine", "app", "server", "kubernetes"] {
        assert!(src.join(layer).is_dir(), "src/{layer} not found");
    }
    let service = fs::read_to_string(src.join("server/service.rs")).expect("service.rs");
    assert!(
        service.contains("crate::app::"),
        "the gRPC service must sit on the core"
    );
}

#[test]
fn a_layer_violation_is_found() {
    assert!(forbidden("app").contains(&"crate::server"));
    assert!(forbidden("app").contains(&"tonic::"));
    assert!(forbidden("model").contains(&"crate::cache"));
    assert!(!forbidden("server").contains(&"crate::app"));
    assert!(forbidden("kubernetes").contains(&"crate::server"));
    assert!(!forbidden("kubernetes").contains(&"crate::app"));
    let code = code_of(
        "use crate::server::pb; // crate::kubernetes\nfn f() { tonic::Status::ok(\"\"); }\n",
    );
    assert!(code.contains("crate::server::pb"));
    assert!(!code.contains("crate::kubernetes"));
}

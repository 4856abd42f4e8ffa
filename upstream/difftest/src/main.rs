//! Differential testing of preemptd against upstream kube-scheduler's DefaultPreemption.
//!
//! `preemptd-difftest run --cases N --seed S --harness H --preemptd P --out DIR
//! [--kubernetes-version V] [--feature-gates G=B,...]` generates N scenarios from the seed,
//! asks the upstream harness (`H [--feature-gates ...] serve`, one JSON line per case; built for
//! V) and `P simulate` (with `PREEMPTD_KUBERNETES_VERSION=V` and `PREEMPTD_FEATURE_GATES`) about
//! each, compares, shrinks every mismatch and saves it to DIR in the conformance scenario format
//! with upstream's answer as `expect`. The last line printed is `N cases, M mismatches (seed S)`.
//! With `GenericWorkload=true` (v1.37 only) most cases hold PodGroups and many preemptors are
//! PodGroups (generate/gangs.rs).
//!
//! `preemptd-difftest generate --cases N --seed S --out DIR` writes the scenarios only (for the
//! harness's batch mode).
//!
//! `preemptd-difftest gang-bench --out DIR [--seed S] [--nodes N] [--victims N] [--gangs
//! 8,32,64] [--per-size N]` writes one gang-preemption timing case (gang_bench.rs) for
//! `harness time --groups` and `bench-vs-upstream --gang`.

mod budgets;
mod compare;
mod gang_bench;
mod generate;
mod peers;
mod shrink;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use peers::{Harness, Preemptd};

/// The Kubernetes minors the harness is built for, and the default (the newest).
const KUBERNETES_VERSIONS: [&str; 3] = ["1.35", "1.36", "1.37"];

struct Args {
    command: String,
    kubernetes_version: String,
    /// `--feature-gates` as given, passed to both sides.
    feature_gates: Option<String>,
    gates: generate::Gates,
    cases: u64,
    seed: Option<u64>,
    only_case: Option<u64>,
    harness: PathBuf,
    preemptd: PathBuf,
    out: PathBuf,
    work: PathBuf,
    gang_shape: gang_bench::Shape,
}

fn parse_args() -> Result<Args, String> {
    let mut raw = std::env::args().skip(1);
    let command = raw.next().ok_or("missing command: run or generate")?;
    let mut args = Args {
        command,
        kubernetes_version: KUBERNETES_VERSIONS[KUBERNETES_VERSIONS.len() - 1].to_string(),
        feature_gates: None,
        gates: generate::Gates::default(),
        cases: 100,
        seed: None,
        only_case: None,
        harness: PathBuf::from("upstream/.cache/harness"),
        preemptd: PathBuf::from("target/release/preemptd"),
        out: PathBuf::from("upstream/mismatches"),
        work: std::env::temp_dir().join(format!("preemptd-difftest-{}", std::process::id())),
        gang_shape: gang_bench::Shape {
            nodes: 1000,
            victims: 10_000,
            gang_sizes: vec![8, 32, 64],
            per_size: 5,
        },
    };
    while let Some(flag) = raw.next() {
        let mut value = || raw.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--cases" => args.cases = value()?.parse().map_err(|e| format!("--cases: {e}"))?,
            "--seed" => args.seed = Some(value()?.parse().map_err(|e| format!("--seed: {e}"))?),
            "--case" => {
                args.only_case = Some(value()?.parse().map_err(|e| format!("--case: {e}"))?)
            }
            "--kubernetes-version" => {
                let v = value()?;
                if !KUBERNETES_VERSIONS.contains(&v.as_str()) {
                    return Err(format!(
                        "--kubernetes-version {v}: supported are {}",
                        KUBERNETES_VERSIONS.join(", ")
                    ));
                }
                args.kubernetes_version = v;
            }
            "--feature-gates" => {
                let spec = value()?;
                args.gates = parse_gates(&spec)?;
                args.feature_gates = Some(spec);
            }
            "--harness" => args.harness = value()?.into(),
            "--preemptd" => args.preemptd = value()?.into(),
            "--out" => args.out = value()?.into(),
            "--work" => args.work = value()?.into(),
            "--nodes" => {
                args.gang_shape.nodes = value()?.parse().map_err(|e| format!("--nodes: {e}"))?
            }
            "--victims" => {
                args.gang_shape.victims = value()?.parse().map_err(|e| format!("--victims: {e}"))?
            }
            "--per-size" => {
                args.gang_shape.per_size =
                    value()?.parse().map_err(|e| format!("--per-size: {e}"))?
            }
            "--gangs" => {
                args.gang_shape.gang_sizes = value()?
                    .split(',')
                    .map(|n| n.trim().parse().map_err(|e| format!("--gangs: {e}")))
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.gates.generic_workload && args.kubernetes_version != "1.37" {
        return Err(format!(
            "--feature-gates GenericWorkload=true needs --kubernetes-version 1.37, not {}",
            args.kubernetes_version
        ));
    }
    Ok(args)
}

/// The gates the generator follows, from `NAME=BOOL[,...]` (others pass through unread).
fn parse_gates(spec: &str) -> Result<generate::Gates, String> {
    let mut gates = generate::Gates::default();
    for pair in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, value) = pair
            .split_once('=')
            .ok_or(format!("--feature-gates {pair}: want NAME=true|false"))?;
        let on: bool = value
            .trim()
            .parse()
            .map_err(|_| format!("--feature-gates {pair}: want NAME=true|false"))?;
        if name.trim() == "GenericWorkload" {
            gates.generic_workload = on;
        }
    }
    Ok(gates)
}

/// The generator of case `index` of a run: independent of every other case, so one case can be
/// replayed alone with `--case`.
fn case_rng(seed: u64, index: u64) -> ChaCha8Rng {
    let mut x = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ChaCha8Rng::seed_from_u64(x ^ (x >> 31))
}

fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    (nanos ^ u64::from(std::process::id()).rotate_left(32)) % 1_000_000_000
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("preemptd-difftest: {e}");
            return ExitCode::from(2);
        }
    };
    let seed = args.seed.unwrap_or_else(|| {
        let s = fresh_seed();
        println!("fresh seed {s}");
        s
    });
    let indices: Vec<u64> = match args.only_case {
        Some(i) => vec![i],
        None => (0..args.cases).collect(),
    };
    let result = match args.command.as_str() {
        "generate" => generate_only(&args, seed, &indices),
        "gang-bench" => {
            if args.gang_shape.nodes == 0 || args.gang_shape.per_size == 0 {
                Err("--nodes and --per-size must be at least 1".to_string())
            } else {
                gang_bench::write(&mut case_rng(seed, 0), &args.gang_shape, &args.out).map(|()| {
                    println!("gang timing case written to {}", args.out.display());
                    0
                })
            }
        }
        "run" => run(&args, seed, &indices),
        other => Err(format!("unknown command {other}")),
    };
    match result {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("preemptd-difftest: {e}");
            ExitCode::from(2)
        }
    }
}

fn scenario_doc(name: &str, source: &str, s: &generate::Scenario, expect: &Value) -> Value {
    json!({
        "name": name,
        "source": source,
        "cluster": s.cluster,
        "preemptor": s.preemptor,
        "expect": expect,
    })
}

fn write_json(path: &std::path::Path, value: &Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

fn generate_only(args: &Args, seed: u64, indices: &[u64]) -> Result<usize, String> {
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    for &i in indices {
        let s = generate::scenario_for(&mut case_rng(seed, i), args.gates);
        let name = format!("seed-{seed}-case-{i}");
        let doc = scenario_doc(&name, "preemptd-difftest generate", &s, &Value::Null);
        write_json(&args.out.join(format!("{name}.json")), &doc)?;
    }
    println!(
        "{} scenarios written to {}",
        indices.len(),
        args.out.display()
    );
    Ok(0)
}

fn run(args: &Args, seed: u64, indices: &[u64]) -> Result<usize, String> {
    std::fs::create_dir_all(&args.work).map_err(|e| format!("{}: {e}", args.work.display()))?;
    let release = Harness::release(&args.harness)?;
    if !release.starts_with(&format!("v{}.", args.kubernetes_version)) {
        return Err(format!(
            "{} is built against k8s.io/kubernetes {release}, not {}",
            args.harness.display(),
            args.kubernetes_version
        ));
    }
    println!(
        "kubernetes {}: upstream kube-scheduler {release}, preemptd with PREEMPTD_KUBERNETES_VERSION={}",
        args.kubernetes_version, args.kubernetes_version
    );
    let gates = args.feature_gates.as_deref();
    if let Some(g) = gates {
        println!("feature gates {g} (harness --feature-gates, PREEMPTD_FEATURE_GATES)");
    }
    let mut harness = Harness::start(&args.harness, gates)?;
    let preemptd = Preemptd::new(&args.preemptd, &args.kubernetes_version, gates, &args.work);
    let started = Instant::now();
    let mut last_report = Instant::now();
    let mut mismatches = 0usize;
    let total = indices.len();
    for (done, &i) in indices.iter().enumerate() {
        let s = generate::scenario_for(&mut case_rng(seed, i), args.gates);
        let verdict = shrink::verdict(&mut harness, &preemptd, &s)?;
        if let Some(verdict) = verdict {
            mismatches += 1;
            let most = budgets::most_budgets_on_one_pod(&s.cluster);
            println!(
                "case {i}: mismatch: {} (at most {most} budgets match one pod)",
                verdict.difference
            );
            if most >= 2 && s.preemptor["kind"] != "PodGroup" {
                println!(
                    "case {i}: {}",
                    budgets::other_orders(&mut harness, &s, &verdict.preemptd)?
                );
            }
            let small = shrink::shrink(&mut harness, &preemptd, s, verdict)?;
            std::fs::create_dir_all(&args.out)
                .map_err(|e| format!("{}: {e}", args.out.display()))?;
            let name = format!("seed-{seed}-case-{i}");
            let mut doc = scenario_doc(
                &name,
                &format!(
                    "preemptd-difftest seed {seed} case {i}, shrunk; expect = upstream kube-scheduler {release} DefaultPreemption, MinCandidateNodesPercentage=100, budgets in (namespace, name) order"
                ),
                &small.scenario,
                &small.upstream,
            );
            doc["kubernetesVersion"] = json!(args.kubernetes_version);
            if let Some(gates) = &args.feature_gates {
                doc["featureGates"] = json!(gates);
            }
            doc["preemptdAnswer"] = small.preemptd.clone();
            doc["difference"] = json!(small.difference);
            let path = args.out.join(format!("{name}.json"));
            write_json(&path, &doc)?;
            println!(
                "case {i}: shrunk to {} items: {} ({})",
                small.scenario.cluster["items"]
                    .as_array()
                    .map_or(0, Vec::len),
                small.difference,
                path.display()
            );
        }
        if last_report.elapsed().as_secs() >= 10 && done + 1 < total {
            last_report = Instant::now();
            println!(
                "{}/{total} cases, {mismatches} mismatches, {:.0}s",
                done + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&args.work);
    println!("{total} cases, {mismatches} mismatches (seed {seed})");
    Ok(mismatches)
}

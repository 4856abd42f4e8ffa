//! Figures of one cluster size, their JSON form and the SVG chart of a sweep.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde_json::{Map, Value, json};

/// Latency histograms are in microseconds, up to a minute, 3 significant digits.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("constant bounds hdrhistogram accepts")
}

/// Latency percentiles (ms) and rate of one phase.
#[derive(Clone, Debug, Default)]
pub struct Latency {
    pub count: u64,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub(crate) fn from_histogram(h: &Histogram<u64>, seconds: f64) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            count: h.len(),
            per_s: if seconds > 0.0 {
                h.len() as f64 / seconds
            } else {
                0.0
            },
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
        }
    }
}

impl Latency {
    /// The run with the median p99 (the lower middle one of an even count).
    pub(crate) fn median_run(mut runs: Vec<Latency>) -> Latency {
        runs.sort_by(|a, b| a.p99_ms.total_cmp(&b.p99_ms));
        let middle = runs.len().saturating_sub(1) / 2;
        runs.into_iter().nth(middle).unwrap_or_default()
    }
}

/// CPU time per operation of one phase, in microseconds: the server process's (what
/// the server costs, whoever else shares the machine) and the bench process's own (what
/// the load generator takes from it). `None` when the server runs in the bench process
/// or its pid is not known.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuPerOp {
    pub server_us: Option<f64>,
    pub bench_us: Option<f64>,
}

impl CpuPerOp {
    fn human(&self) -> String {
        match (self.server_us, self.bench_us) {
            (Some(server), Some(bench)) => {
                format!("  cpu per op: server {server:.1} us, bench {bench:.1} us")
            }
            _ => String::new(),
        }
    }

    fn json(value: Option<f64>) -> Value {
        value.map_or(Value::Null, |v| json!(round(v, 2)))
    }
}

/// Every figure measured for one cluster size.
#[derive(Clone, Debug, Default)]
pub struct SizeReport {
    pub nodes: usize,
    pub pods: usize,
    pub pdbs: usize,
    pub concurrency: usize,
    pub sync_objects: u64,
    pub sync_seconds: f64,
    pub sync_pods_seconds: f64,
    /// Per synced object.
    pub sync_cpu: CpuPerOp,
    pub preempt: Latency,
    /// Per decision (warm-up calls included).
    pub preempt_cpu: CpuPerOp,
    /// How many resource-only decisions ended in each outcome.
    pub preempt_outcomes: Map<String, Value>,
    pub affinity: Latency,
    pub affinity_outcomes: Map<String, Value>,
    pub affinity_cpu: CpuPerOp,
    pub update: Latency,
    pub update_cpu: CpuPerOp,
    pub update_concurrency: usize,
    pub watchers: usize,
    /// Events published per watch run.
    pub watch_events: u64,
    /// The median run (by p99) of the runs without a stalled subscriber.
    pub watch: Latency,
    /// The median run of the runs with one.
    pub watch_stalled: Latency,
    pub watch_runs_p99_ms: Vec<f64>,
    pub watch_stalled_runs_p99_ms: Vec<f64>,
    /// Per event delivered to one subscriber, over the runs without a stalled one.
    pub watch_cpu: CpuPerOp,
    /// Events some subscriber never received (should be 0).
    pub watch_missed: u64,
    /// Where RSS was read: "process" (the server process, by pid), "in-process" (the
    /// bench process with its server), or "none".
    pub rss_source: &'static str,
    pub rss_bytes_per_pod: f64,
    pub rss_bytes_per_node: f64,
    pub rss_after_load_bytes: u64,
    pub seconds: f64,
}

fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

impl SizeReport {
    pub fn sync_objects_per_s(&self) -> f64 {
        if self.sync_seconds > 0.0 {
            self.sync_objects as f64 / self.sync_seconds
        } else {
            0.0
        }
    }

    /// How much the stalled subscriber moved the others' p99 (median runs), in percent.
    pub fn stalled_effect_percent(&self) -> Option<f64> {
        (self.watch.p99_ms > 0.0 && self.watch_stalled.count > 0)
            .then(|| (self.watch_stalled.p99_ms / self.watch.p99_ms - 1.0) * 100.0)
    }

    pub fn print_human(&self) {
        let l = |name: &str, x: &Latency, cpu: &CpuPerOp| {
            println!(
                "{name:<28} n={:<7} p50 {:>8.3} ms  p90 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms  {:>10.0}/s{}",
                x.count,
                x.p50_ms,
                x.p90_ms,
                x.p99_ms,
                x.max_ms,
                x.per_s,
                cpu.human()
            )
        };
        println!(
            "sync: {} objects in {:.3} s = {:.0} objects/s (pods alone {:.3} s){}",
            self.sync_objects,
            self.sync_seconds,
            self.sync_objects_per_s(),
            self.sync_pods_seconds,
            self.sync_cpu.human()
        );
        l("preempt (resources)", &self.preempt, &self.preempt_cpu);
        println!(
            "  outcomes: {}",
            Value::Object(self.preempt_outcomes.clone())
        );
        l(
            "preempt (anti-affinity)",
            &self.affinity,
            &self.affinity_cpu,
        );
        println!(
            "  outcomes: {}",
            Value::Object(self.affinity_outcomes.clone())
        );
        l("update pod (ack)", &self.update, &self.update_cpu);
        l(
            &format!("watch lag ({} subs)", self.watchers),
            &self.watch,
            &self.watch_cpu,
        );
        l(
            "watch lag (+1 stalled)",
            &self.watch_stalled,
            &CpuPerOp::default(),
        );
        if let Some(effect) = self.stalled_effect_percent() {
            println!(
                "  median runs; p99 per run: {:?} ms, with the stalled subscriber {:?} ms: {effect:+.1}%",
                self.watch_runs_p99_ms, self.watch_stalled_runs_p99_ms
            );
        }
        println!(
            "rss ({}): {:.0} B per pod, {:.0} B per node, {:.1} MiB after load",
            self.rss_source,
            self.rss_bytes_per_pod,
            self.rss_bytes_per_node,
            self.rss_after_load_bytes as f64 / (1 << 20) as f64
        );
    }

    pub fn json(&self) -> Value {
        let r3 = |v: f64| round(v, 3);
        let fields: Vec<(&str, Value)> = vec![
            ("nodes", json!(self.nodes)),
            ("pods", json!(self.pods)),
            ("pdbs", json!(self.pdbs)),
            ("concurrency", json!(self.concurrency)),
            ("sync_objects", json!(self.sync_objects)),
            ("sync_seconds", json!(r3(self.sync_seconds))),
            ("sync_pods_seconds", json!(r3(self.sync_pods_seconds))),
            (
                "sync_server_cpu_us",
                CpuPerOp::json(self.sync_cpu.server_us),
            ),
            ("sync_bench_cpu_us", CpuPerOp::json(self.sync_cpu.bench_us)),
            (
                "sync_objects_per_s",
                json!(self.sync_objects_per_s().round()),
            ),
            ("preempt_count", json!(self.preempt.count)),
            ("preempt_p50_ms", json!(r3(self.preempt.p50_ms))),
            ("preempt_p90_ms", json!(r3(self.preempt.p90_ms))),
            ("preempt_p99_ms", json!(r3(self.preempt.p99_ms))),
            ("preempt_max_ms", json!(r3(self.preempt.max_ms))),
            ("preempt_per_s", json!(self.preempt.per_s.round())),
            (
                "preempt_server_cpu_us",
                CpuPerOp::json(self.preempt_cpu.server_us),
            ),
            (
                "preempt_bench_cpu_us",
                CpuPerOp::json(self.preempt_cpu.bench_us),
            ),
            (
                "preempt_outcomes",
                json!(Value::Object(self.preempt_outcomes.clone())),
            ),
            ("preempt_affinity_count", json!(self.affinity.count)),
            ("preempt_affinity_p50_ms", json!(r3(self.affinity.p50_ms))),
            ("preempt_affinity_p90_ms", json!(r3(self.affinity.p90_ms))),
            ("preempt_affinity_p99_ms", json!(r3(self.affinity.p99_ms))),
            ("preempt_affinity_max_ms", json!(r3(self.affinity.max_ms))),
            ("preempt_affinity_per_s", json!(self.affinity.per_s.round())),
            (
                "preempt_affinity_server_cpu_us",
                CpuPerOp::json(self.affinity_cpu.server_us),
            ),
            (
                "preempt_affinity_bench_cpu_us",
                CpuPerOp::json(self.affinity_cpu.bench_us),
            ),
            (
                "preempt_affinity_outcomes",
                json!(Value::Object(self.affinity_outcomes.clone())),
            ),
            ("update_count", json!(self.update.count)),
            ("update_concurrency", json!(self.update_concurrency)),
            ("update_per_s", json!(self.update.per_s.round())),
            ("update_p50_ms", json!(r3(self.update.p50_ms))),
            ("update_p99_ms", json!(r3(self.update.p99_ms))),
            ("update_max_ms", json!(r3(self.update.max_ms))),
            (
                "update_server_cpu_us",
                CpuPerOp::json(self.update_cpu.server_us),
            ),
            (
                "update_bench_cpu_us",
                CpuPerOp::json(self.update_cpu.bench_us),
            ),
            ("watchers", json!(self.watchers)),
            ("watch_events", json!(self.watch_events)),
            ("watch_lag_p50_ms", json!(r3(self.watch.p50_ms))),
            ("watch_lag_p99_ms", json!(r3(self.watch.p99_ms))),
            ("watch_lag_max_ms", json!(r3(self.watch.max_ms))),
            ("watch_runs_p99_ms", json!(self.watch_runs_p99_ms)),
            (
                "watch_server_cpu_us",
                CpuPerOp::json(self.watch_cpu.server_us),
            ),
            (
                "watch_bench_cpu_us",
                CpuPerOp::json(self.watch_cpu.bench_us),
            ),
            (
                "watch_stalled_lag_p50_ms",
                json!(r3(self.watch_stalled.p50_ms)),
            ),
            (
                "watch_stalled_lag_p99_ms",
                json!(r3(self.watch_stalled.p99_ms)),
            ),
            (
                "watch_stalled_lag_max_ms",
                json!(r3(self.watch_stalled.max_ms)),
            ),
            (
                "watch_stalled_runs_p99_ms",
                json!(self.watch_stalled_runs_p99_ms),
            ),
            (
                "watch_stalled_effect_percent",
                self.stalled_effect_percent()
                    .map_or(Value::Null, |v| json!(round(v, 1))),
            ),
            ("watch_missed", json!(self.watch_missed)),
            ("rss_source", json!(self.rss_source)),
            ("rss_bytes_per_pod", json!(self.rss_bytes_per_pod.round())),
            ("rss_bytes_per_node", json!(self.rss_bytes_per_node.round())),
            ("rss_after_load_bytes", json!(self.rss_after_load_bytes)),
            ("seconds", json!(r3(self.seconds))),
        ];
        Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }
}

/// The last size's figures at the top level; with several sizes, all of them under
/// `sizes` too.
pub(crate) fn final_json(reports: &[SizeReport]) -> Value {
    let mut top = reports
        .last()
        .map(SizeReport::json)
        .unwrap_or_else(|| json!({}));
    if reports.len() > 1
        && let Value::Object(map) = &mut top
    {
        map.insert(
            "sizes".to_string(),
            Value::Array(reports.iter().map(SizeReport::json).collect()),
        );
    }
    top
}

/// A chart series: name, colour, (pods, p99 ms) points.
type Series = (&'static str, &'static str, Vec<(f64, f64)>);

/// A log-log line chart of Preempt p99 (resources-only and anti-affinity + spread)
/// against cluster size in pods, as a standalone SVG document.
pub fn svg_chart(reports: &[SizeReport]) -> String {
    const W: f64 = 720.0;
    const H: f64 = 440.0;
    const LEFT: f64 = 80.0;
    const RIGHT: f64 = 190.0;
    const TOP: f64 = 50.0;
    const BOTTOM: f64 = 60.0;
    let points = |pick: fn(&SizeReport) -> f64| -> Vec<(f64, f64)> {
        reports
            .iter()
            .filter(|r| r.pods > 0 && pick(r) > 0.0)
            .map(|r| (r.pods as f64, pick(r)))
            .collect()
    };
    let series: [Series; 2] = [
        ("resources only", "#1f77b4", points(|r| r.preempt.p99_ms)),
        (
            "anti-affinity + spread",
            "#d62728",
            points(|r| r.affinity.p99_ms),
        ),
    ];
    let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.2.iter().copied()).collect();
    let decade = |v: f64, up: bool| {
        let l = v.log10();
        if up { l.ceil() } else { l.floor() }
    };
    let (x0, x1, y0, y1) = if all.is_empty() {
        (5.0, 6.0, -1.0, 1.0)
    } else {
        let fold = |f: fn(&(f64, f64)) -> f64, up: bool| {
            all.iter()
                .map(f)
                .fold(if up { f64::MIN } else { f64::MAX }, |a, b| {
                    if up { a.max(b) } else { a.min(b) }
                })
        };
        let x0 = decade(fold(|p| p.0, false), false);
        let x1 = decade(fold(|p| p.0, true), true).max(x0 + 1.0);
        let y0 = decade(fold(|p| p.1, false), false);
        let y1 = decade(fold(|p| p.1, true), true).max(y0 + 1.0);
        (x0, x1, y0, y1)
    };
    let px = |x: f64| LEFT + (x.log10() - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (y.log10() - y0) / (y1 - y0) * (H - TOP - BOTTOM);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">preemptd: Preempt p99 over gRPC (dry run) vs cluster size</text>"#,
        W / 2.0
    );
    // Decade grid lines and labels.
    let mut e = x0;
    while e <= x1 {
        let x = px(10f64.powf(e));
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM + 18.0,
            human_count(10f64.powf(e))
        );
        e += 1.0;
    }
    let mut e = y0;
    while e <= y1 {
        let y = py(10f64.powf(e));
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            human_ms(10f64.powf(e))
        );
        e += 1.0;
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="#333"/>"##,
        W - LEFT - RIGHT,
        H - TOP - BOTTOM
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">cluster size (bound pods, log scale)</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 16.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">p99 latency (log scale)</text>"#,
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0
    );
    for (i, (name, color, pts)) in series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            path.join(" ")
        );
        for &(x, y) in pts {
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{color}"><title>{} pods: {y:.3} ms</title></circle>"#,
                px(x),
                py(y),
                human_count(x)
            );
        }
        let ly = TOP + 20.0 + 22.0 * i as f64;
        let lx = W - RIGHT + 14.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2"/><text x="{}" y="{}">{name}</text>"#,
            lx + 22.0,
            lx + 28.0,
            ly + 4.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn human_count(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", round(v / 1e6, 1))
    } else if v >= 1e3 {
        format!("{}k", round(v / 1e3, 1))
    } else {
        format!("{v}")
    }
}

fn human_ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{} s", round(v / 1000.0, 2))
    } else {
        format!("{} ms", round(v, 3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_both_series_and_parses_as_xml_shape() {
        let mut a = SizeReport {
            pods: 150_000,
            ..SizeReport::default()
        };
        a.preempt.p99_ms = 1.5;
        a.affinity.p99_ms = 8.0;
        let mut b = a.clone();
        b.pods = 1_000_000;
        b.preempt.p99_ms = 9.0;
        b.affinity.p99_ms = 40.0;
        let svg = svg_chart(&[a, b]);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn the_median_run_is_the_middle_p99() {
        let run = |p99_ms: f64| Latency {
            p99_ms,
            ..Latency::default()
        };
        let median = |p99s: &[f64]| Latency::median_run(p99s.iter().map(|&p| run(p)).collect());
        assert_eq!(median(&[9.0, 3.0, 5.0]).p99_ms, 5.0);
        assert_eq!(median(&[4.0, 2.0]).p99_ms, 2.0);
        assert_eq!(median(&[7.0]).p99_ms, 7.0);
        assert_eq!(median(&[]).count, 0);
    }

    #[test]
    fn stalled_effect_compares_the_median_runs() {
        let mut report = SizeReport::default();
        assert_eq!(report.stalled_effect_percent(), None);
        report.watch.p99_ms = 10.0;
        report.watch_stalled.p99_ms = 11.5;
        report.watch_stalled.count = 100;
        let effect = report.stalled_effect_percent().expect("both measured");
        assert!((effect - 15.0).abs() < 1e-9, "{effect}");
    }

    #[test]
    fn cpu_figures_are_null_when_not_measured() {
        let json = SizeReport {
            update_cpu: CpuPerOp {
                server_us: Some(41.237),
                bench_us: None,
            },
            ..SizeReport::default()
        }
        .json();
        assert_eq!(json["update_server_cpu_us"], json!(41.24));
        assert!(json["update_bench_cpu_us"].is_null());
        assert!(json["sync_server_cpu_us"].is_null());
    }

    #[test]
    fn sweep_json_keeps_every_size() {
        let json = final_json(&[SizeReport::default(), SizeReport::default()]);
        assert_eq!(json["sizes"].as_array().map(Vec::len), Some(2));
        assert!(json.get("preempt_p99_ms").is_some());
    }
}

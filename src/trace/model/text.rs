//! The model as a person reads it: one summary line and a short table.

use super::{Model, Op};
use crate::units::{format_bytes, format_latency_ns, format_rate};

fn size_name(b: u64) -> String {
    format_bytes(b).to_lowercase().replace("ib", "")
}

impl Model {
    /// The one-line summary: "72% reads, 8k and 128k peaks, 41% sequential, p99 in-flight 14,
    /// bursty: IDC 6.3".
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let data = self.count(Op::Read) + self.count(Op::Write);
        if data > 0 {
            parts.push(format!("{:.0}% reads", self.read_pct_of_data()));
        }
        let mut peaks: Vec<(u64, u64)> = Vec::new();
        for s in self.sizes.iter().filter(|s| s.op.is_data()) {
            for c in &s.sizes {
                match peaks.iter_mut().find(|p| p.0 == c.size) {
                    Some(p) => p.1 += c.count,
                    None => peaks.push((c.size, c.count)),
                }
            }
        }
        peaks.sort_by_key(|p| std::cmp::Reverse(p.1));
        let big: Vec<String> = peaks
            .iter()
            .filter(|p| p.1 as f64 >= 0.1 * data as f64)
            .take(3)
            .map(|p| size_name(p.0))
            .collect();
        match big.len() {
            0 => {}
            1 => parts.push(format!("{} IOs", big[0])),
            _ => parts.push(format!("{} peaks", big.join(" and "))),
        }
        if data > 0 {
            parts.push(format!("{:.0}% sequential", self.sequential.sequential_pct));
        }
        if let Some(t) = self
            .skew
            .as_ref()
            .and_then(|s| s.zipf_theta)
            .filter(|t| *t >= 0.3)
        {
            parts.push(format!("zipf {t:.2}"));
        }
        if let Some(f) = &self.in_flight {
            parts.push(format!("p99 in-flight {}", f.p99));
        }
        if let Some((_, idc)) = self.arrivals.idc.iter().find(|(w, _)| *w == 100) {
            let word = if *idc > 2.0 {
                "bursty"
            } else if *idc < 0.5 {
                "steady"
            } else {
                "random arrivals"
            };
            parts.push(format!("{word}: IDC {idc:.1}"));
        }
        let flushes = self.count(Op::Flush);
        if flushes > 0 {
            parts.push(format!("{flushes} flushes"));
        }
        parts.join(", ")
    }

    /// The table of `iolab capture --show`.
    pub fn table(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "{} IOs in {:.1}s ({} IOPS): {}\n\n",
            self.ios,
            self.duration_s,
            format_rate(self.arrivals.iops),
            self.summary()
        ));
        s.push_str(&self.mix_table());
        s.push('\n');
        let q = &self.sequential;
        s.push_str(&format!(
            "sequential  {:.1}% of reads+writes; {} runs, mean {:.1} IOs, longest {}\n",
            q.sequential_pct, q.runs, q.mean_run_ios, q.max_run_ios
        ));
        if !q.jumps.is_empty() {
            let j: Vec<String> = q
                .jumps
                .iter()
                .map(|(l, p)| format!("{l} {p:.0}%"))
                .collect();
            s.push_str(&format!("jumps       {}\n", j.join(", ")));
        }
        let f = &self.footprint;
        s.push_str(&format!(
            "footprint   {} touched ({} read, {} written) within {}..{}\n",
            format_bytes(f.bytes),
            format_bytes(f.read_bytes),
            format_bytes(f.write_bytes),
            format_bytes(f.start),
            format_bytes(f.end)
        ));
        if let Some(k) = &self.skew {
            let hot: Vec<String> = k
                .hot
                .iter()
                .map(|h| format!("{:.0}% of blocks get {:.0}%", h.blocks_pct, h.ios_pct))
                .collect();
            s.push_str(&format!(
                "skew        {}; zipf {} (uniform would give the top 10% {:.0}%)\n",
                hot.join(", "),
                k.zipf_theta
                    .map_or_else(|| "-".into(), |t| format!("{t:.2}")),
                k.uniform_top10_pct
            ));
        }
        let a = &self.arrivals;
        let idc: Vec<String> = a.idc.iter().map(|(w, v)| format!("{w}ms {v:.2}")).collect();
        s.push_str(&format!(
            "arrivals    gap p50 {} p90 {} p99 {}, cv {:.2}; IDC {}\n",
            format_latency_ns(a.gap_p50_ns as f64),
            format_latency_ns(a.gap_p90_ns as f64),
            format_latency_ns(a.gap_p99_ns as f64),
            a.gap_cv,
            if idc.is_empty() {
                "-".into()
            } else {
                idc.join(", ")
            }
        ));
        if let Some(f) = &self.in_flight {
            s.push_str(&format!(
                "in flight   mean {:.1}, p50 {}, p99 {}, max {}\n",
                f.mean, f.p50, f.p99, f.max
            ));
        }
        for l in &self.latency {
            s.push_str(&format!(
                "latency     {:<7} p50 {} p99 {} max {} ({} IOs)\n",
                l.op.name(),
                format_latency_ns(l.p50_ns as f64),
                format_latency_ns(l.p99_ns as f64),
                format_latency_ns(l.max_ns as f64),
                l.count
            ));
        }
        if !self.processes.is_empty() {
            let p: Vec<String> = self
                .processes
                .iter()
                .map(|(n, c)| format!("{n} {c}"))
                .collect();
            s.push_str(&format!("processes   {}\n", p.join(", ")));
        }
        s
    }

    /// The op mix part of [`Model::table`]: one row per op with its IOs, share, bytes and most
    /// frequent sizes.
    fn mix_table(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "{:<10} {:>10} {:>7} {:>10}  {}\n",
            "op", "IOs", "share", "bytes", "sizes (most frequent first)"
        ));
        for m in &self.mix {
            let sizes = self
                .sizes
                .iter()
                .find(|x| x.op == m.op)
                .map(|x| {
                    let mut v: Vec<String> = x
                        .sizes
                        .iter()
                        .take(4)
                        .map(|c| format!("{} {:.0}%", size_name(c.size), c.pct))
                        .collect();
                    if x.sizes.len() > 4 {
                        v.push(format!("+{} more", x.sizes.len() - 4));
                    }
                    v.join(", ")
                })
                .unwrap_or_default();
            s.push_str(&format!(
                "{:<10} {:>10} {:>6.1}% {:>10}  {}\n",
                m.op.name(),
                m.count,
                m.pct,
                format_bytes(m.bytes),
                sizes
            ));
        }
        s
    }
}

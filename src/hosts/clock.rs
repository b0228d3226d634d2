//! Clock offsets from round trips: how far a host's wall clock is from the controller's.
//!
//! Each probe gives three times: controller send `t0`, agent clock `a`, controller receipt
//! `t1`. If the two legs took equally long, the agent read its clock at `(t0 + t1) / 2` of the
//! controller's, so `offset = a - (t0 + t1) / 2`, wrong by at most half the round trip. Queues
//! (ssh, the scheduler) only ever add delay, so the probes with the lowest round trips are the
//! honest ones: keep those, take their median.

/// One clock probe: controller send time, agent clock, controller receipt time (Unix ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Controller clock when the probe was sent.
    pub sent_ns: u64,
    /// Agent clock when it answered.
    pub agent_ns: u64,
    /// Controller clock when the answer arrived.
    pub received_ns: u64,
}

impl Probe {
    /// Round trip, ns.
    pub fn rtt_ns(&self) -> u64 {
        self.received_ns.saturating_sub(self.sent_ns)
    }

    /// Agent clock minus controller clock at the probe's midpoint, ns.
    pub fn offset_ns(&self) -> i64 {
        let mid = u64::midpoint(self.sent_ns, self.received_ns);
        self.agent_ns as i64 - mid as i64
    }
}

/// What the probes say about one host's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ClockEstimate {
    /// Agent clock minus controller clock, ns (add to a controller instant to get the agent's).
    pub offset_ns: i64,
    /// The lowest round trip seen, ns (the offset is right to within half of it).
    pub rtt_ns: u64,
    /// Probes answered.
    pub probes: u32,
}

/// How many of the fastest probes the offset is taken from.
pub const KEEP_FASTEST: usize = 3;

/// The offset from the fastest probes (their median); `None` without probes.
pub fn estimate(probes: &[Probe]) -> Option<ClockEstimate> {
    if probes.is_empty() {
        return None;
    }
    let mut p = probes.to_vec();
    p.sort_by_key(Probe::rtt_ns);
    p.truncate(KEEP_FASTEST);
    let mut offs: Vec<i64> = p.iter().map(Probe::offset_ns).collect();
    offs.sort_unstable();
    Some(ClockEstimate {
        // The upper middle of an even count: an offset a probe measured, never a mean of two.
        offset_ns: crate::quantile::upper_middle(&offs)?,
        rtt_ns: p[0].rtt_ns(),
        probes: probes.len() as u32,
    })
}

/// A controller instant on the agent's clock.
pub fn to_agent(controller_ns: u64, offset_ns: i64) -> u64 {
    controller_ns.saturating_add_signed(offset_ns)
}

/// An agent instant on the controller's clock.
pub fn to_controller(agent_ns: u64, offset_ns: i64) -> u64 {
    agent_ns.saturating_add_signed(-offset_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_probes_do_not_bend_the_offset() {
        // The agent is 5 ms ahead. Fast probes: symmetric 100 us legs. Slow ones: a 20 ms
        // queue on the way back only, which alone would put the offset 10 ms off.
        let ahead = 5_000_000u64;
        let mut probes = Vec::new();
        for i in 0..3u64 {
            let t0 = 1_000_000_000 + i * 50_000_000;
            probes.push(Probe {
                sent_ns: t0,
                agent_ns: t0 + 100_000 + ahead,
                received_ns: t0 + 200_000,
            });
        }
        for i in 0..5u64 {
            let t0 = 2_000_000_000 + i * 50_000_000;
            probes.push(Probe {
                sent_ns: t0,
                agent_ns: t0 + 100_000 + ahead,
                received_ns: t0 + 20_200_000,
            });
        }
        let e = estimate(&probes).expect("probes");
        assert_eq!(e.offset_ns, ahead as i64);
        assert_eq!(e.rtt_ns, 200_000);
        assert_eq!(e.probes, 8);
        // Plain averaging would have been ~6 ms off.
        let mean: i64 = probes.iter().map(Probe::offset_ns).sum::<i64>() / 8;
        assert!((mean - ahead as i64).abs() > 5_000_000, "{mean}");
        assert_eq!(to_controller(to_agent(123, e.offset_ns), e.offset_ns), 123);
    }

    #[test]
    fn no_probes_no_estimate() {
        assert_eq!(estimate(&[]), None);
    }
}

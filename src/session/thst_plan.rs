//! Which THST request a VM takes, as a pure table the session consults.
//!
//! Two request layouts exist for thread status:
//! - **poll** (later Dalvik, ART): an empty THST chunk; the VM answers with one status chunk;
//!   the proxy asks again whenever a viewer is due;
//! - **interval** (the design document): THST carrying `u4 interval` in milliseconds; the VM
//!   then sends a status chunk every interval until it is told 0.
//!
//! A VM that knows only one of them answers the other with a FAIL chunk (the document's
//! VM finds an empty request too short) or a JDWP error. The plan starts with the poll form,
//! switches to the other form on a refusal, and keeps the form that last brought a status
//! chunk for the VM's lifetime, across reconnects. When both forms are refused since the last
//! status chunk, it gives up and the viewers are told why.

use std::time::Duration;

/// How often a VM following the document is asked to send thread status while a viewer
/// watches (twice a second: the document's "blinkenlights" rate).
pub const THST_INTERVAL: Duration = Duration::from_millis(500);

/// A THST request layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThstForm {
    /// An empty request, one status chunk per request.
    Poll,
    /// `u4 interval` (ms, 0 = off), status chunks pushed every interval.
    Interval,
}

impl ThstForm {
    fn other(self) -> ThstForm {
        match self {
            ThstForm::Poll => ThstForm::Interval,
            ThstForm::Interval => ThstForm::Poll,
        }
    }
}

/// What the session does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThstStep {
    Nothing,
    /// Send an empty THST.
    PollNow,
    /// Send THST with this interval in ms (0 turns the pushes off).
    SetInterval(u32),
    /// Both forms were refused: tell the viewers and stop.
    GiveUp,
}

#[derive(Debug, Clone)]
pub struct ThstPlan {
    /// The form to use (the one that last worked, or the one being tried).
    using: ThstForm,
    /// Forms refused since the last status chunk: [poll, interval].
    refused: [bool; 2],
    /// The interval the VM was last told on this connection (0: none or off).
    interval_set: u32,
}

impl Default for ThstPlan {
    fn default() -> Self {
        ThstPlan { using: ThstForm::Poll, refused: [false; 2], interval_set: 0 }
    }
}

fn slot(form: ThstForm) -> usize {
    match form {
        ThstForm::Poll => 0,
        ThstForm::Interval => 1,
    }
}

fn interval_ms() -> u32 {
    u32::try_from(THST_INTERVAL.as_millis()).unwrap_or(u32::MAX)
}

impl ThstPlan {
    /// The form in use.
    pub fn form(&self) -> ThstForm {
        self.using
    }

    /// Viewers are due for fresh status (also when the first viewer comes).
    pub fn due(&mut self) -> ThstStep {
        match self.using {
            ThstForm::Poll => ThstStep::PollNow,
            ThstForm::Interval if self.interval_set == 0 => {
                self.interval_set = interval_ms();
                ThstStep::SetInterval(self.interval_set)
            }
            ThstForm::Interval => ThstStep::Nothing,
        }
    }

    /// The last viewer left.
    pub fn stop(&mut self) -> ThstStep {
        if self.interval_set == 0 {
            return ThstStep::Nothing;
        }
        self.interval_set = 0;
        ThstStep::SetInterval(0)
    }

    /// A status chunk arrived: the form in use works on this VM.
    pub fn status_arrived(&mut self) {
        self.refused = [false; 2];
    }

    /// The VM refused a THST request of `form`; `watching` says whether viewers still wait.
    pub fn refused(&mut self, form: ThstForm, watching: bool) -> ThstStep {
        self.refused[slot(form)] = true;
        if form == ThstForm::Interval {
            self.interval_set = 0;
        }
        if form != self.using {
            // A late answer to a form already left behind.
            return ThstStep::Nothing;
        }
        let other = form.other();
        if self.refused[slot(other)] {
            // Start afresh for the next viewer: the VM may have changed its mind.
            *self = ThstPlan::default();
            return ThstStep::GiveUp;
        }
        self.using = other;
        if watching {
            self.due()
        } else {
            ThstStep::Nothing
        }
    }

    /// A new connection: the VM forgot any interval; refusals are history.
    pub fn reconnected(&mut self) {
        self.interval_set = 0;
        self.refused = [false; 2];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy)]
    enum Ev {
        Due,
        Stop,
        Status,
        Refused(ThstForm, bool),
        Reconnected,
    }

    fn apply(p: &mut ThstPlan, e: Ev) -> ThstStep {
        match e {
            Ev::Due => p.due(),
            Ev::Stop => p.stop(),
            Ev::Status => {
                p.status_arrived();
                ThstStep::Nothing
            }
            Ev::Refused(f, w) => p.refused(f, w),
            Ev::Reconnected => {
                p.reconnected();
                ThstStep::Nothing
            }
        }
    }

    const MS: u32 = 500;

    #[test]
    fn the_table() {
        use Ev::*;
        use ThstForm::*;
        use ThstStep::*;
        // (what, events with the step each must give, the form in use at the end)
        type Case<'a> = (&'a str, &'a [(Ev, ThstStep)], ThstForm);
        let cases: &[Case] = &[
            ("a modern VM is polled", &[(Due, PollNow), (Status, Nothing), (Due, PollNow), (Stop, Nothing)], Poll),
            (
                "the document's VM refuses the poll: interval, then 0 when the viewer leaves",
                &[(Due, PollNow), (Refused(Poll, true), SetInterval(MS)), (Status, Nothing), (Due, Nothing), (Stop, SetInterval(0))],
                Interval,
            ),
            (
                "the form that worked is remembered for the next viewer and across reconnects",
                &[
                    (Due, PollNow),
                    (Refused(Poll, true), SetInterval(MS)),
                    (Status, Nothing),
                    (Stop, SetInterval(0)),
                    (Reconnected, Nothing),
                    (Due, SetInterval(MS)),
                ],
                Interval,
            ),
            (
                "both refused: give up, and start afresh next time",
                &[(Due, PollNow), (Refused(Poll, true), SetInterval(MS)), (Refused(Interval, true), GiveUp), (Due, PollNow)],
                Poll,
            ),
            (
                "a remembered form refused later: the other one is tried again",
                &[(Due, PollNow), (Refused(Poll, true), SetInterval(MS)), (Status, Nothing), (Refused(Interval, true), PollNow)],
                Poll,
            ),
            ("a refusal after the viewer left switches quietly", &[(Due, PollNow), (Refused(Poll, false), Nothing)], Interval),
            ("a late refusal of a form left behind changes nothing", &[(Due, PollNow), (Refused(Interval, true), Nothing)], Poll),
            ("nothing to turn off when nothing was turned on", &[(Stop, Nothing), (Due, PollNow), (Stop, Nothing)], Poll),
        ];
        for (what, events, end) in cases {
            let mut p = ThstPlan::default();
            for (i, (e, want)) in events.iter().enumerate() {
                assert_eq!(apply(&mut p, *e), *want, "{what}: event {i} {e:?}");
            }
            assert_eq!(p.form(), *end, "{what}");
        }
    }

    fn ev() -> impl Strategy<Value = Ev> {
        let form = prop_oneof![Just(ThstForm::Poll), Just(ThstForm::Interval)];
        prop_oneof![
            Just(Ev::Due),
            Just(Ev::Stop),
            Just(Ev::Status),
            Just(Ev::Reconnected),
            (form, any::<bool>()).prop_map(|(f, w)| Ev::Refused(f, w)),
        ]
    }

    proptest! {
        /// Whatever happens: the VM is never left pushing with nobody to turn it off (after
        /// Stop no interval is set), an interval is only sent in the interval form, and
        /// GiveUp only comes after both forms were refused.
        #[test]
        fn never_leaves_pushes_on_and_gives_up_only_when_both_failed(events in prop::collection::vec(ev(), 0..40)) {
            let mut p = ThstPlan::default();
            let mut refused = [false; 2];
            for e in events {
                let form_before = p.form();
                match e {
                    Ev::Status | Ev::Reconnected => refused = [false; 2],
                    Ev::Refused(f, _) => refused[slot(f)] = true,
                    _ => {}
                }
                let step = apply(&mut p, e);
                match step {
                    ThstStep::SetInterval(ms) if ms > 0 => prop_assert_eq!(p.form(), ThstForm::Interval),
                    ThstStep::PollNow => prop_assert_eq!(p.form(), ThstForm::Poll),
                    ThstStep::GiveUp => {
                        prop_assert!(refused[0] && refused[1]);
                        prop_assert!(matches!(e, Ev::Refused(f, _) if f == form_before));
                        refused = [false; 2];
                    }
                    _ => {}
                }
                if let Ev::Stop = e {
                    prop_assert_eq!(p.stop(), ThstStep::Nothing);
                }
            }
        }
    }
}

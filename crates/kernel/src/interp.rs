//! Stepping a task through its program.
//!
//! Ops that touch only the task (work, syscall entry, variables, jumps,
//! counters) are gathered into one [`Batch`] and run as
//! a single interval: one event however many ops it holds. An op that
//! touches shared state (a lock, another CPU, preemption) runs only at the
//! true current time, so the batch before it ends there first.

use smpsim_engine::Nanos;

use crate::event::*;
use crate::mechanism::{Flow, MechanismOp};
use crate::program::*;
use crate::task::*;

/// Ops interpreted per step before simulated time must move on.
const OPS_PER_STEP: u32 = 10_000;
/// Counts and samples a task may have planned ahead of its batch (bounds
/// the memory a loop of local work and counts takes).
const MAX_CREDITS: usize = 256;
/// Steps in a row without time after which a task is stuck (10 million ops).
const TIMELESS_STEPS: u32 = 1_000;

impl<'s> crate::Kernel<'s> {
    /// Lets the task's unfinished batch of work (cut short by an
    /// interrupt or a switch) run on first; false if there is none.
    #[inline]
    pub(crate) fn resume_batch(&mut self, c: u32, t: TaskId) -> bool {
        let batch = &self.tasks[t as usize].batch;
        if batch.is_empty() {
            return false;
        }
        let end = self.now.saturating_add(batch.total());
        self.arm_cpu(c, end);
        true
    }

    /// Runs task `t`, current on CPU `c`, from where it is.
    ///
    /// The loop takes the task once per op (`task`); an op that calls into
    /// the rest of the kernel gives it up and looks it up again after.
    pub(crate) fn run_task(&mut self, c: u32, t: TaskId) {
        if self.resume_batch(c, t) {
            return;
        }
        // The batch has reached an op that faulted when it was planned:
        // the fault happens now, and the run stops here.
        if let Some(fault) = self.tasks[t as usize].fault.take() {
            self.report_fault(c, t, fault);
            return;
        }
        let spec = self.spec;
        let ops = &spec.task_groups[self.tasks[t as usize].group as usize]
            .program
            .ops[..];
        // Whether any op can read a shared variable at all (the objects
        // are fixed for the run).
        // (Or RCU's grace-period sequence, which a polled grace period
        // reads.)
        let has_variables =
            self.locking.objects().has_variables() || self.rcu.in_use() || self.reads_lock_words();
        let now = self.now;
        let mut steps = 0u32;
        let mut timeless = false;
        loop {
            steps += 1;
            // A fault stops the task where it is: nothing after it runs.
            if self.halted() || self.tasks[t as usize].fault.is_some() {
                break;
            }
            let task = &mut self.tasks[t as usize];
            if steps > OPS_PER_STEP {
                // A loop with no time in it must not stall simulated time.
                if task.batch.is_empty() {
                    task.batch.push(task.mode, 1);
                    timeless = true;
                }
                break;
            }
            let op = &ops[task.pc as usize];
            let batch_empty = task.batch.is_empty();
            // A read of a shared variable happens at its own time, not
            // ahead of it inside the batch.
            let reads_ahead = has_variables && !batch_empty;
            let flow = match op {
                Op::Work(d) => {
                    if task.batch.total() >= MAX_SPAN {
                        // Longer than any run: let this much pass first.
                        break;
                    }
                    let mut ns = d.sample(&mut task.rng);
                    let task = if self.cost.scales_work {
                        let vt = planned_at(now, task);
                        ns = self.scale_work(c, ns, vt);
                        &mut self.tasks[t as usize]
                    } else {
                        task
                    };
                    if !task.batch.push(task.mode, ns) {
                        break;
                    }
                    None
                }
                Op::WorkUnits { units, .. } if reads_ahead && units.reads_shared() => break,
                Op::WorkUnits { time, units } => {
                    if task.batch.total() >= MAX_SPAN {
                        break;
                    }
                    let per_unit = time.sample(&mut task.rng);
                    let mut n = self.eval(t, units);
                    if n < 0 {
                        self.report_negative(t, "work units", n);
                        n = 0;
                    }
                    let mut ns = per_unit.saturating_mul(n as u64).min(MAX_SPAN);
                    if self.cost.scales_work {
                        let vt = planned_at(now, &self.tasks[t as usize]);
                        ns = self.scale_work(c, ns, vt);
                    }
                    let task = &mut self.tasks[t as usize];
                    if !task.batch.push(task.mode, ns) {
                        break;
                    }
                    None
                }
                Op::SyscallEnter => {
                    if !task.batch.push(Mode::Sys, self.cost.syscall) {
                        break;
                    }
                    task.mode = Mode::Sys;
                    None
                }
                Op::SyscallExit => {
                    task.mode = Mode::User;
                    if !task.held.is_empty() {
                        let at = planned_at(now, task);
                        self.lockdep_sys_exit(c, t, at);
                    }
                    None
                }
                Op::Set { expr, .. } if reads_ahead && expr.reads_shared() => break,
                Op::JumpUnless(cond, _) if reads_ahead && cond.reads_shared() => break,
                Op::Set { slot, expr } => {
                    let v = self.eval(t, expr);
                    self.tasks[t as usize].vars[*slot as usize] = v;
                    None
                }
                Op::LoopCount { slot, expr } => {
                    let mut v = self.eval(t, expr);
                    if v < 0 {
                        self.report_negative(t, "loop count", v);
                        v = 0;
                    }
                    self.tasks[t as usize].vars[*slot as usize] = v;
                    None
                }
                Op::Jump(to) => {
                    task.pc = *to;
                    continue;
                }
                Op::JumpUnless(cond, to) => {
                    if !self.cond(t, cond) {
                        self.tasks[t as usize].pc = *to;
                        continue;
                    }
                    None
                }
                Op::LoopBack { slot, target } => {
                    let left = &mut task.vars[*slot as usize];
                    *left -= 1;
                    if *left > 0 {
                        task.pc = *target;
                        continue;
                    }
                    None
                }
                Op::Choose { cumulative } => {
                    let total = cumulative.last().map(|x| x.0).unwrap_or(1);
                    let draw = task.rng.below(total);
                    let to = cumulative.iter().find(|(w, _)| draw < *w).map(|x| x.1);
                    task.pc = to.expect("draw below total");
                    continue;
                }
                Op::Count(counter) => {
                    let vt = planned_at(now, task);
                    if !self.credit(t, vt, CreditKind::Count(*counter)) {
                        break;
                    }
                    None
                }
                Op::Mark(slot) => {
                    task.vars[*slot as usize] = planned_at(now, task) as i64;
                    None
                }
                Op::RecordSince { hist, slot } => {
                    let vt = planned_at(now, task);
                    let since = task.vars[*slot as usize] as Nanos;
                    let what = CreditKind::Record(*hist, vt.saturating_sub(since));
                    if !self.credit(t, vt, what) {
                        break;
                    }
                    None
                }
                Op::Sleep { dist, overshoot } => {
                    if !self.ready_for_shared(t, batch_empty) {
                        break;
                    }
                    Some(self.hrtimer_sleep(c, t, dist, *overshoot))
                }
                Op::Exit => {
                    if !self.ready_for_shared(t, batch_empty) {
                        break;
                    }
                    let mm_done = self.tasks[t as usize].resume == Resume::Exit;
                    Some(self.exit(c, t, mm_done))
                }
                Op::Preempt(o) => self.mechanism_op(c, t, o, batch_empty),
                Op::Rcu(o) => self.mechanism_op(c, t, o, batch_empty),
                Op::Locking(o) => self.mechanism_op(c, t, o, batch_empty),
                Op::Smp(o) => self.mechanism_op(c, t, o, batch_empty),
                Op::Hotplug(o) => self.mechanism_op(c, t, o, batch_empty),
                Op::Stop(o) => self.mechanism_op(c, t, o, batch_empty),
                Op::Check(o) => self.mechanism_op(c, t, o, batch_empty),
                Op::Cpumask(o) => self.mechanism_op(c, t, o, batch_empty),
                Op::PercpuRef(o) => self.mechanism_op(c, t, o, batch_empty),
            };
            match flow {
                // A local op of the task's own, done.
                None => {
                    self.tasks[t as usize].pc += 1;
                    continue;
                }
                // A wakeup's hooks that take locks hold the task up
                // after the op that woke (`hooks.rs`).
                Some(Flow::Next) if crate::hooks::Hooks::hook_run_waiting(self, c) => break,
                Some(Flow::Next) => continue,
                Some(Flow::Stop) => {
                    self.tasks[t as usize].timeless_steps = 0;
                    return;
                }
                // The batch runs up to the op first.
                Some(Flow::Wait) => break,
            }
        }
        if timeless {
            self.timeless_step(c, t);
        } else {
            self.tasks[t as usize].timeless_steps = 0;
        }
        let end = if crate::hooks::Hooks::hook_run_waiting(self, c) {
            self.now
        } else {
            self.now
                .saturating_add(self.tasks[t as usize].batch.total())
        };
        self.arm_cpu(c, end);
    }

    /// A count or sample planned at `vt`, inside the task's batch: credited
    /// now if the batch has not begun, else when the batch reaches it
    /// ([`Self::settle`] dates it). False when the task has as many pending
    /// as it may hold: planning stops here until the batch runs.
    fn credit(&mut self, t: TaskId, vt: Nanos, what: CreditKind) -> bool {
        let task = &mut self.tasks[t as usize];
        if task.batch.is_empty() {
            self.metrics.credit(vt, what);
            return true;
        }
        // Planned past the end of the run: it can never happen in it.
        if vt > self.spec.duration {
            return true;
        }
        if task.credits.len() >= MAX_CREDITS {
            return false;
        }
        let at = task.batch_clock.saturating_add(task.batch.total());
        task.credits.push_back(Credit { at, what });
        true
    }

    /// The task ran `OPS_PER_STEP` ops without any taking time. A program
    /// that keeps doing so can never reach the end of the run: after
    /// `TIMELESS_STEPS` such steps in a row, report it as the kernel's
    /// softlockup watchdog would a CPU stuck in a loop, and end the run.
    fn timeless_step(&mut self, c: u32, t: TaskId) {
        let task = &mut self.tasks[t as usize];
        task.timeless_steps += 1;
        if task.timeless_steps < TIMELESS_STEPS {
            return;
        }
        let pc = task.pc;
        let program = &self.spec.task_groups[task.group as usize].program;
        let op = format!("{:?}", program.ops[pc as usize]);
        let name = self.task_name(t);
        self.metrics.no_progress(c, self.now, &name, pc, &op);
        self.halt();
    }

    /// Whether a shared-state op may run now: once the task's batch has
    /// run up to it, and an explored schedule has had its chance to delay
    /// the task there first.
    #[inline]
    fn ready_for_shared(&mut self, t: TaskId, batch_empty: bool) -> bool {
        if !batch_empty {
            return false;
        }
        if self.sched.perturb.is_some() && !self.tasks[t as usize].perturbed {
            self.tasks[t as usize].perturbed = true;
            if let Some(delay) = self.perturb_delay() {
                let task = &mut self.tasks[t as usize];
                task.batch.push(task.mode, delay);
                return false;
            }
        }
        true
    }

    /// A mechanism's op: a local one at once, inside the batch; one that
    /// touches shared state at the current time, in its mechanism.
    #[inline]
    fn mechanism_op<M: MechanismOp<crate::Kernel<'s>>>(
        &mut self,
        c: u32,
        t: TaskId,
        op: &M,
        batch_empty: bool,
    ) -> Option<Flow> {
        if op.local() {
            return Some(op.run(self, c, t, Resume::Op));
        }
        if !self.ready_for_shared(t, batch_empty) {
            return Some(Flow::Wait);
        }
        let resume = self.tasks[t as usize].resume;
        Some(op.run(self, c, t, resume))
    }

    /// `clock_nanosleep()` on an hrtimer.
    fn hrtimer_sleep(&mut self, c: u32, t: TaskId, dist: &Dist, overshoot: Option<HistId>) -> Flow {
        let task = &mut self.tasks[t as usize];
        let ns = dist.sample(&mut task.rng);
        task.pc += 1;
        task.resume = Resume::Op;
        task.wait.wake_deadline = self.now + ns;
        task.wait.overshoot_hist = overshoot;
        let gen = task.gen.wrapping_add(1);
        task.gen = gen;
        self.at(
            self.now.saturating_add(ns),
            Event::Sched(SchedEvent::Timer { task: t, gen }),
        );
        self.block(c, t);
        self.tasks[t as usize].wait.interruptible = true;
        Flow::Stop
    }

    /// `do_exit()`: `exit_mm()` first (mm_users, the lazy reference, maybe
    /// the free), then the task is gone.
    fn exit(&mut self, c: u32, t: TaskId, mm_done: bool) -> Flow {
        if !mm_done {
            let cost = self.mm_exit(c, t);
            let task = &mut self.tasks[t as usize];
            task.batch.push(Mode::Sys, cost);
            task.resume = Resume::Exit;
            let end = self.now.saturating_add(task.batch.total());
            self.arm_cpu(c, end);
            return Flow::Stop;
        }
        self.tasks[t as usize].exited_at = Some(self.now);
        self.task_exited();
        self.set_state(t, TaskState::Exited);
        self.schedule(c);
        Flow::Stop
    }

    /// Moves to the next op.
    pub(crate) fn advance(&mut self, t: TaskId) {
        let task = &mut self.tasks[t as usize];
        task.pc += 1;
        task.perturbed = false;
        task.resume = Resume::Op;
    }

    /// The mutex instance an object reference names for task `t`.
    /// An index outside `[0, nr_cpu_ids)` would be a wild `per_cpu_ptr()`
    /// in the kernel: it is reported, and the run stops.
    ///
    /// Inline for the usual reference, a single object; an indexed one
    /// takes the call.
    #[inline]
    pub(crate) fn instance(&mut self, t: TaskId, r: &ObjRef) -> u32 {
        match &r.index {
            None => self.locking.objects().first_instance(r.object),
            Some(e) => self.indexed_instance(t, r, e),
        }
    }

    /// [`Self::instance`] of a reference with an index expression.
    /// An element of an object array is an object of its own (the
    /// array's first element + the index); a per-CPU object's is one of
    /// its instances.
    fn indexed_instance(&mut self, t: TaskId, r: &ObjRef, e: &Expr) -> u32 {
        let base = self.locking.objects().first_instance(r.object);
        let i = self.eval_inline(t, e);
        let array = self.spec.layout.array_len(r.object);
        let len = array.unwrap_or(self.nr_cpus());
        if i < 0 || i >= len as i64 {
            let fault = Fault::BadIndex {
                object: r.object,
                index: i,
            };
            self.fault(t, fault);
            return base;
        }
        match array {
            Some(_) => self.locking.objects().first_instance(r.object + i as u32),
            None => base + i as u32,
        }
    }

    /// [`Self::eval`] with constants and variables, most of what
    /// conditions and instance indices hold, read inline at the caller.
    /// Only for small callers: inlined into a large one (`run_task`) it
    /// costs that one more in register saves than it spares.
    #[inline(always)]
    fn eval_inline(&mut self, t: TaskId, e: &Expr) -> i64 {
        match e {
            Expr::Const(v) => *v,
            Expr::Var(s) => self.tasks[t as usize].vars[*s as usize],
            _ => self.eval(t, e),
        }
    }

    /// The value of `e` for task `t`.
    pub(crate) fn eval(&mut self, t: TaskId, e: &Expr) -> i64 {
        match e {
            Expr::Const(v) => *v,
            Expr::Var(s) => self.tasks[t as usize].vars[*s as usize],
            Expr::ThisCpu => self.tasks[t as usize].cpu as i64,
            Expr::NrCpus => self.nr_cpus() as i64,
            Expr::TaskIndex => self.tasks[t as usize].index as i64,
            Expr::GroupSize => {
                let g = self.tasks[t as usize].group as usize;
                self.spec.task_groups[g].placement.len() as i64
            }
            Expr::RandomCpu => self.tasks[t as usize].rng.below(self.cpus.len() as u64) as i64,
            Expr::CpuCurrMm(cpu) => {
                let cpu = self.eval(t, cpu);
                if cpu < 0 || cpu >= self.nr_cpus() as i64 {
                    return -1;
                }
                match self.cpus[cpu as usize].curr {
                    NO_TASK => -1,
                    curr => self.tasks[curr as usize].mm as i64,
                }
            }
            Expr::CurrentMm => self.tasks[t as usize].mm as i64,
            // A hook's view of its event (`hooks.rs`); scenario loading
            // refuses them in a task's code.
            Expr::TaskCpu => self.tasks[t as usize].cpu as i64,
            Expr::PrevMm | Expr::NextMm | Expr::PrevActiveMm => -1,
            Expr::Hash(x) => crate::program::hash_64_32(self.eval(t, x)),
            Expr::RcuGetState => self.rcu.get_state_synchronize_rcu(),
            Expr::ReadOnce(r) => {
                let i = self.instance(t, r);
                self.locking.objects().variable(i)
            }
            Expr::Uniform(lo, hi) => {
                let (lo, hi) = (self.eval(t, lo), self.eval(t, hi));
                if hi <= lo {
                    lo
                } else {
                    lo + self.tasks[t as usize].rng.below((hi - lo) as u64) as i64
                }
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.eval(t, a), self.eval(t, b));
                match op {
                    BinOp::Add => a.wrapping_add(b),
                    BinOp::Sub => a.wrapping_sub(b),
                    BinOp::Mul => a.wrapping_mul(b),
                    BinOp::Div | BinOp::Rem => {
                        let q = if *op == BinOp::Div {
                            a.checked_div(b)
                        } else {
                            a.checked_rem(b)
                        };
                        q.unwrap_or_else(|| {
                            self.divide_error(t, a, b);
                            0
                        })
                    }
                }
            }
        }
    }

    /// A division by zero (or `i64::MIN / -1`) in a task's expression: the
    /// kernel's `divide error` oops; the run stops.
    fn divide_error(&mut self, t: TaskId, a: i64, b: i64) {
        let pc = self.tasks[t as usize].pc;
        self.fault(t, Fault::Divide { pc, a, b });
    }

    /// A fault of task `t`'s current op. At the task's true time (its
    /// batch has run up to the op) it is reported and the run stops now;
    /// in an op planned ahead of the batch it waits for the batch to
    /// reach the op ([`Self::run_task`]), so that it is dated when it
    /// happens and nothing planned after it is counted.
    fn fault(&mut self, t: TaskId, fault: Fault) {
        let task = &mut self.tasks[t as usize];
        if !task.batch.is_empty() {
            task.fault.get_or_insert(fault);
            return;
        }
        let c = task.cpu;
        self.report_fault(c, t, fault);
    }

    /// Reports `fault` at the current time and stops the run.
    fn report_fault(&mut self, c: u32, t: TaskId, fault: Fault) {
        let name = self.task_name(t);
        match fault {
            Fault::Divide { pc, a, b } => self.metrics.divide_error(c, self.now, &name, pc, a, b),
            Fault::BadIndex { object, index } => {
                let now = self.now;
                self.report_bad_index(c, now, &name, object, index)
            }
        }
        self.halt();
    }

    /// `who` (a task, or a hook: `hooks.rs`) on CPU `c` indexed `object`
    /// with `index`, outside the array or `[0, nr_cpu_ids)`, at `at`:
    /// the `bad_percpu_index` finding (the caller stops the run).
    pub(crate) fn report_bad_index(
        &mut self,
        c: u32,
        at: Nanos,
        who: &str,
        object: u32,
        index: i64,
    ) {
        use crate::metrics::IndexBound;
        let bound = match self.spec.layout.array_len(object) {
            Some(len) => IndexBound::ArrayLen(len),
            None => IndexBound::NrCpuIds(self.nr_cpus()),
        };
        // An array is declared as its elements in a row, named
        // `name[i]`; the finding names the array.
        let object = &self.spec.objects[object as usize].name;
        let object = match bound {
            IndexBound::ArrayLen(_) => object.strip_suffix("[0]").unwrap_or(object),
            IndexBound::NrCpuIds(_) => object,
        };
        self.metrics.bad_index(c, at, who, object, index, bound)
    }

    /// The task's name, its CPU, and the op it is at, for a finding.
    pub(crate) fn where_is(&self, t: TaskId) -> (String, u32, String) {
        let task = &self.tasks[t as usize];
        let program = &self.spec.task_groups[task.group as usize].program;
        let at = match program.ops.get(task.pc as usize) {
            Some(op) => format!("op #{} ({op:?})", task.pc),
            None => format!("op #{}", task.pc),
        };
        (self.task_name(t), task.cpu, at)
    }

    /// A loop count or `units` evaluated negative.
    /// Dated where the task's batch has run to when it evaluates it.
    pub(crate) fn report_negative(&mut self, t: TaskId, what: &str, n: i64) {
        let (name, c, at) = self.where_is(t);
        let when = planned_at(self.now, &self.tasks[t as usize]);
        if when > self.spec.duration {
            return;
        }
        self.metrics.negative_count(c, when, &name, what, n, &at);
    }

    pub(crate) fn cond(&mut self, t: TaskId, c: &Cond) -> bool {
        match c {
            Cond::CpuOnline(e) => {
                let cpu = self.eval_inline(t, e);
                cpu >= 0 && cpu < self.nr_cpus() as i64 && self.cpus[cpu as usize].online
            }
            Cond::Cmp(op, a, b) => {
                let (a, b) = (self.eval_inline(t, a), self.eval_inline(t, b));
                match op {
                    CmpOp::Eq => a == b,
                    CmpOp::Ne => a != b,
                    CmpOp::Lt => a < b,
                    CmpOp::Le => a <= b,
                    CmpOp::Gt => a > b,
                    CmpOp::Ge => a >= b,
                }
            }
            Cond::RcuPollState(e) => {
                let oldstate = self.eval_inline(t, e);
                self.rcu.poll_state_synchronize_rcu(oldstate)
            }
            Cond::Not(inner) => !self.cond(t, inner),
            Cond::SpinIsLocked(r) => {
                let l = self.instance(t, r);
                self.spin_is_locked(t, l)
            }
            // Short-circuit, as C's: a `spin_is_locked()` on the right
            // reads its line only when it is evaluated.
            Cond::And(a, b) => self.cond(t, a) && self.cond(t, b),
            Cond::Or(a, b) => self.cond(t, a) || self.cond(t, b),
        }
    }

    /// `spin_is_locked()` of spinlock instance `l` by task `t`: a read of
    /// the lock word's line where the task's time has reached (at once: a
    /// condition that reads a lock word is evaluated with nothing planned
    /// ahead of it), charged to the task as `atomic_read()`'s is; whether
    /// the lock is held (by a task or a hook) then.
    fn spin_is_locked(&mut self, t: TaskId, l: u32) -> bool {
        let task = &self.tasks[t as usize];
        let (c, at) = (task.cpu, planned_at(self.now, task));
        let lock = self.locking.objects_mut().spinlock_mut(l);
        let held = lock.is_locked();
        let done = lock.imp.word_mut().read(&self.cost, c, at);
        self.tasks[t as usize].batch.push(Mode::Sys, done - at);
        held
    }

    /// A spinning task observed what it waited for.
    pub(crate) fn on_spin_end(&mut self, t: TaskId, gen: u32) -> smpsim_engine::Handled {
        let task = &mut self.tasks[t as usize];
        if task.gen != gen || task.wait.spin == Spin::None {
            return smpsim_engine::Handled::Stale;
        }
        if task.wait.spin == Spin::CsdWait && task.smp.csd_pending > 1 {
            // csd_lock_wait() moves on to the next CSD.
            task.smp.csd_pending -= 1;
            return smpsim_engine::Handled::Done;
        }
        task.smp.csd_pending = 0;
        task.wait.spin_done = true;
        let c = task.cpu;
        let cpu = &self.cpus[c as usize];
        if cpu.curr == t && cpu.activity == crate::cpu::Activity::Task {
            self.kick(c);
        }
        smpsim_engine::Handled::Done
    }

    /// Completes the op a task was spinning in, then continues its program.
    /// Called from [`Self::kick`], which has settled the CPU's time.
    pub(crate) fn finish_spin(&mut self, c: u32, t: TaskId) {
        debug_assert_eq!(self.cpus[c as usize].accounted_to, self.now);
        let task = &mut self.tasks[t as usize];
        let spin = task.wait.spin;
        task.wait.spin = Spin::None;
        task.wait.spin_done = false;
        task.gen = task.gen.wrapping_add(1);
        match spin {
            Spin::CsdWait => {
                let start = self.tasks[t as usize].wait.wait_start;
                self.metrics.csd_wait(c, start, self.now);
                if let Flow::Stop = self.smp_call_done(c, t) {
                    return;
                }
            }
            Spin::Lock { .. } => {
                // The lock was handed to us; preemption (and IRQs) stay off.
                self.advance(t);
            }
            Spin::Sleeping { kind, lock, .. } => {
                if !self.sleeping_spin_finished(c, t, kind, lock) {
                    return;
                }
            }
            Spin::StopMachine => {
                self.run_kthread(c, t);
                return;
            }
            Spin::None => {}
        }
        self.run_task(c, t);
    }
}

/// When an op the task plans now runs: once the batch planned before it
/// has (the op's virtual time).
#[inline]
fn planned_at(now: Nanos, task: &Task) -> Nanos {
    now.saturating_add(task.batch.total())
}

#[cfg(test)]
mod tests {
    /// The `match` that starts at the first line holding `start` in `src`,
    /// to its closing brace: the arms at its own level.
    fn arms<'a>(src: &'a str, start: &str) -> Vec<&'a str> {
        let lines: Vec<&str> = src.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.contains(start))
            .unwrap_or_else(|| panic!("no `{start}`"));
        let indent = lines[at].len() - lines[at].trim_start().len();
        let close = format!("{}}}", " ".repeat(indent));
        lines[at + 1..]
            .iter()
            .take_while(|l| !l.starts_with(&close))
            .filter(|l| l.len() - l.trim_start().len() == indent + 4)
            .map(|l| l.trim())
            .collect()
    }

    /// The interpreter's dispatch and every mechanism's op handler match
    /// exhaustively, with no wildcard arm and no `unreachable!`: a new op
    /// without its handler is a compile error (the `compile_fail` example
    /// on [`super::MechanismOp`] shows the error), never a panic at run
    /// time.
    #[test]
    fn op_dispatch_has_no_fallback_arm() {
        let interp = include_str!("interp.rs");
        let handlers = [
            ("interp.rs", interp, "let flow = match op {"),
            (
                "sched/preempt.rs",
                include_str!("sched/preempt.rs"),
                "match self {",
            ),
            ("rcu/ops.rs", include_str!("rcu/ops.rs"), "match self {"),
            (
                "locking/ops.rs",
                include_str!("locking/ops.rs"),
                "match self {",
            ),
            ("smp.rs", include_str!("smp.rs"), "match self {"),
            (
                "hotplug.rs",
                include_str!("hotplug.rs"),
                "let (e, online) = match self {",
            ),
            (
                "stop_machine.rs",
                include_str!("stop_machine.rs"),
                "match self {",
            ),
            ("check.rs", include_str!("check.rs"), "match self {"),
            ("cpumask.rs", include_str!("cpumask.rs"), "match self {"),
            (
                "locking/percpu_ref.rs",
                include_str!("locking/percpu_ref.rs"),
                "let done = match self {",
            ),
        ];
        for (file, src, start) in handlers {
            let src = match src.find("MechanismOp<") {
                Some(i) if file != "interp.rs" => &src[i..],
                _ => src,
            };
            let arms = arms(src, start);
            assert!(!arms.is_empty(), "{file}: no arms found");
            for arm in arms {
                assert!(
                    !arm.starts_with("_ ") && !arm.contains("unreachable!"),
                    "{file}: a fallback arm in the op dispatch: {arm}"
                );
            }
        }
        // The lock kinds the locking ops reach: no `unreachable!` on the
        // way (a kind without an op answers it), only in `build`, where a
        // declaration of another type cannot arrive.
        let kinds = [
            ("locking/mutex/mod.rs", include_str!("locking/mutex/mod.rs")),
            ("locking/rwsem/mod.rs", include_str!("locking/rwsem/mod.rs")),
            ("locking/semaphore.rs", include_str!("locking/semaphore.rs")),
            ("locking/seqcount.rs", include_str!("locking/seqcount.rs")),
            ("locking/rt_mutex.rs", include_str!("locking/rt_mutex.rs")),
            (
                "locking/percpu_rwsem.rs",
                include_str!("locking/percpu_rwsem.rs"),
            ),
        ];
        for (file, src) in kinds {
            let mut in_fn = "";
            for line in src.lines() {
                if let Some(at) = line.find("fn ") {
                    in_fn = &line[at..];
                }
                if line.contains("unreachable!") {
                    assert!(
                        in_fn.starts_with("fn build("),
                        "{file}: `unreachable!` in `{in_fn}`"
                    );
                }
            }
        }
    }
}

//! Integer expressions and conditions, written as strings in scenarios.
//!
//! ```text
//! cond  := and ("||" and)*                  (C's precedence: `!`, then
//! and   := unary ("&&" unary)*               comparisons, `&&`, `||`;
//! unary := "!" unary | "not" unary | prim     evaluated with short-circuit)
//! prim  := "(" cond ")"
//!        | "cpu_online(" expr ")" | "cpu_curr_shares_mm(" expr ")"
//!        | "poll_state_synchronize_rcu(" expr ")"
//!        | "spin_is_locked(" LOCK ("[" expr "]")? ")"    (not in hooks)
//!        | expr ("==" | "!=" | "<" | "<=" | ">" | ">=") expr
//! (`!` before a bare comparison is refused: C reads `!x == 1` as
//! `(!x) == 1`; `not x == 1` is `!(x == 1)`.)
//! (`cpu_curr_shares_mm(c)` is shorthand for `cpu_curr_mm(c) == current_mm`.)
//! expr  := term (("+" | "-") term)*
//! term  := unary (("*" | "/" | "%") unary)*
//! unary := "-" unary | atom
//! atom  := INT | VAR | "nr_cpus" | "task_index" | "group_size" | "current_mm"
//!        | "this_cpu()" | "random_cpu()" | "uniform(" expr "," expr ")"
//!        | "cpu_curr_mm(" expr ")" | "hash(" expr ")"
//!        | "get_state_synchronize_rcu()" | "get_completed_synchronize_rcu()"
//!        | "task_cpu()" | "prev_mm()" | "next_mm()" | "prev_active_mm()"
//!                                                  (in hooks: [`HookView`])
//!        | "(" expr ")"
//! ```

use std::ops::Range;

use smpsim_kernel::program::{BinOp, CmpOp, Cond, Expr, ObjRef, Slot};

use crate::error::StrErr;
use crate::object_type::ObjectType;

/// Names with a built-in meaning; they cannot be variables.
pub(crate) const RESERVED: &[&str] = &[
    "nr_cpus",
    "task_index",
    "group_size",
    "this_cpu",
    "random_cpu",
    "uniform",
    "cpu_online",
    "cpu_curr_shares_mm",
    "cpu_curr_mm",
    "current_mm",
    "hash",
    "get_state_synchronize_rcu",
    "get_completed_synchronize_rcu",
    "poll_state_synchronize_rcu",
    "spin_is_locked",
    "task_cpu",
    "prev_mm",
    "next_mm",
    "prev_active_mm",
    "not",
    "and",
    "or",
    "forever",
];

const MAX_DEPTH: usize = 64;

/// What a hook's expressions may use, for the refusals of the rest.
pub(crate) const HOOK_SEES: &str = "its expressions see only numbers, `+ - * / %`, `nr_cpus`, `this_cpu()`, `random_cpu()`, `hash(x)`, and as its event allows `task_cpu()`, `prev_mm()`, `next_mm()`, `prev_active_mm()`; its conditions compare these or test `cpu_online(CPU)`";

/// What a hook's code may see of its event: `task_cpu()` (the wakee's or
/// the moved task's CPU, `task_cpu(p)`) at the events about another
/// task, `prev_mm()`/`next_mm()` (`prev->mm`, `next->mm`) at a switch.
/// None outside `[hooks]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HookView {
    /// The hook's event, as the scenario names it.
    pub event: &'static str,
    /// The event is about a task other than the CPU's current one.
    pub task: bool,
    /// The event is a switch, with a `prev` and a `next`.
    pub switch: bool,
}

impl HookView {
    /// The view of the hook at `event` ([`smpsim_kernel::hooks::HOOK_NAMES`]).
    pub(crate) fn of(event: &'static str) -> Self {
        HookView {
            event,
            task: matches!(
                event,
                "try_to_wake_up" | "enqueue_task_fair" | "set_task_cpu"
            ),
            switch: matches!(event, "sched_switch" | "idle_exit"),
        }
    }
}

/// Looks up a variable's slot; `Err` holds the names that are declared.
pub(crate) type Resolver<'r> = dyn Fn(&str) -> Result<Slot, Vec<String>> + 'r;

/// A declared object an expression names: a shared `variable` read, or
/// the spinlock `spin_is_locked()` reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SharedObject {
    /// Its id (an array's first element).
    pub id: u32,
    pub per_cpu: bool,
    /// An object array's length.
    pub array: Option<u32>,
}

/// Finds an object of a type by name; else the names of the declared
/// objects of that type.
pub(crate) type SharedResolver<'r> =
    dyn Fn(&str, ObjectType) -> Result<SharedObject, Vec<String>> + 'r;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Ident(String),
    Sym(&'static str),
}

fn lex(s: &str) -> Result<Vec<(Tok, Range<usize>)>, StrErr> {
    const SYMS: &[&str] = &[
        "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "(", ")", "[",
        "]", ",",
    ];
    let mut out = Vec::new();
    let mut i = 0;
    let b = s.as_bytes();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                i += 1;
            }
            let digits: String = s[start..i].chars().filter(|&c| c != '_').collect();
            let v = digits
                .parse::<i64>()
                .map_err(|_| StrErr::new(start..i, "integer is too large"))?;
            out.push((Tok::Int(v), start..i));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(s[start..i].to_string()), start..i));
        } else if let Some(sym) = SYMS.iter().find(|sym| s[i..].starts_with(**sym)) {
            out.push((Tok::Sym(sym), i..i + sym.len()));
            i += sym.len();
        } else {
            let ch = s[i..].chars().next().unwrap_or('?');
            let err = StrErr::new(i..i + ch.len_utf8(), format!("unexpected character `{ch}`"));
            return Err(match ch {
                // C's bitwise operators: numbers have none here.
                '&' | '|' => err.help(format!(
                    "there is no bitwise `{ch}`; join conditions with `{ch}{ch}`"
                )),
                _ => err,
            });
        }
    }
    Ok(out)
}

struct Parser<'a, 'r> {
    toks: Vec<(Tok, Range<usize>)>,
    pos: usize,
    len: usize,
    depth: usize,
    vars: &'a Resolver<'r>,
    shared: &'a SharedResolver<'r>,
    view: Option<HookView>,
}

impl Parser<'_, '_> {
    /// Refuses `what` (written at `at`) in a hook: a hook has no task of
    /// its own, so a task's state, its random stream and shared reads are
    /// not there to evaluate (`smpsim_kernel::hooks::allowed_in_hook`).
    fn task_only(&self, what: &str, at: Range<usize>) -> Result<(), StrErr> {
        match self.view {
            Some(v) => Err(StrErr::new(
                at,
                format!("`{what}` cannot be evaluated in a hook (hook `{}`): a hook runs in atomic context with no task of its own; {HOOK_SEES}", v.event),
            )),
            None => Ok(()),
        }
    }

    /// After `task_cpu(`, `prev_mm(` or `next_mm(`: the `)`, and whether
    /// the hook being compiled (if any) sees it.
    fn hook_view(&mut self, name: &str, at: Range<usize>) -> Result<Expr, StrErr> {
        self.expect(")")?;
        let at = at.start..self.toks[self.pos - 1].1.end;
        let (seen, expr) = match name {
            "task_cpu" => (self.view.is_some_and(|v| v.task), Expr::TaskCpu),
            "prev_mm" => (self.view.is_some_and(|v| v.switch), Expr::PrevMm),
            "prev_active_mm" => (self.view.is_some_and(|v| v.switch), Expr::PrevActiveMm),
            _ => (self.view.is_some_and(|v| v.switch), Expr::NextMm),
        };
        if seen {
            return Ok(expr);
        }
        const TASK_EVENTS: &str = "`try_to_wake_up`, `enqueue_task_fair` and `set_task_cpu`";
        const SWITCH_EVENTS: &str = "`sched_switch` and `idle_exit`";
        let msg = match (name, self.view) {
            ("task_cpu", None) => "`task_cpu()` is a hook's view of the task its event is about (the wakee's or the moved task's CPU, in hooks ".to_string() + TASK_EVENTS + "); a task's own CPU is `this_cpu()`",
            ("task_cpu", Some(v)) => format!("hook `{}` is about no task but the CPU's own: `task_cpu()` is the wakee's or the moved task's CPU, in hooks {TASK_EVENTS}; this CPU is `this_cpu()`", v.event),
            (_, None) => format!("`{name}()` is a switch's hook view (`prev->mm`, `next->mm`, `prev->active_mm`, in hooks {SWITCH_EVENTS}); a task's own address space is `current_mm`"),
            (_, Some(v)) => format!("hook `{}` runs at no switch: `prev_mm()`, `next_mm()` and `prev_active_mm()` are `prev->mm`, `next->mm` and `prev->active_mm` in hooks {SWITCH_EVENTS}", v.event),
        };
        Err(StrErr::new(at, msg))
    }

    /// After `read_once(`, `per_cpu(` or `this_cpu_read(`: the variable,
    /// the CPU for `per_cpu`, and the `)`.
    fn shared_read(&mut self, f: &str, at: Range<usize>) -> Result<Expr, StrErr> {
        let here = self.here();
        let Some(Tok::Ident(var)) = self.peek().cloned() else {
            return Err(StrErr::new(
                here,
                format!("`{f}(...)` takes a shared variable's name"),
            ));
        };
        let SharedObject {
            id: object,
            per_cpu,
            ..
        } = (self.shared)(&var, ObjectType::Variable).map_err(|known| {
            StrErr::new(
                here.clone(),
                format!(
                    "`{var}` is not a shared variable; declared: {} (an object of type \"variable\")",
                    crate::error::list(&known)
                ),
            )
        })?;
        self.pos += 1;
        let index = match (f, per_cpu) {
            ("read_once", false) => None,
            ("per_cpu", true) => {
                self.expect(",")?;
                Some(self.expr()?)
            }
            ("this_cpu_read", true) => Some(Expr::ThisCpu),
            (_, true) => {
                return Err(StrErr::new(
                    at,
                    format!("`{var}` is per-CPU: read it with `this_cpu_read({var})` or `per_cpu({var}, CPU)`"),
                ))
            }
            (_, false) => {
                return Err(StrErr::new(
                    at,
                    format!("`{var}` is not per-CPU: read it with `read_once({var})`"),
                ))
            }
        };
        self.expect(")")?;
        Ok(Expr::ReadOnce(Box::new(ObjRef { object, index })))
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn here(&self) -> Range<usize> {
        self.toks
            .get(self.pos)
            .map_or(self.len..self.len, |t| t.1.clone())
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "the end".into(),
            Some(Tok::Int(v)) => format!("`{v}`"),
            Some(Tok::Ident(n)) => format!("`{n}`"),
            Some(Tok::Sym(s)) => format!("`{s}`"),
        }
    }

    fn eat(&mut self, sym: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(s)) if *s == sym) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, sym: &str) -> Result<(), StrErr> {
        if self.eat(sym) {
            Ok(())
        } else {
            Err(StrErr::new(
                self.here(),
                format!("expected `{sym}`, found {}", self.describe()),
            ))
        }
    }

    fn enter(&mut self) -> Result<(), StrErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(StrErr::new(self.here(), "expression is nested too deeply"));
        }
        Ok(())
    }

    fn cond(&mut self) -> Result<Cond, StrErr> {
        self.enter()?;
        let r = self.or_cond();
        self.depth -= 1;
        r
    }

    /// `a || b || ...`: the loosest, as in C.
    fn or_cond(&mut self) -> Result<Cond, StrErr> {
        let mut lhs = self.and_cond()?;
        while self.eat("||") {
            let rhs = self.and_cond()?;
            lhs = Cond::Or(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    /// `a && b && ...`: binds tighter than `||`, looser than comparisons.
    fn and_cond(&mut self) -> Result<Cond, StrErr> {
        let mut lhs = self.unary_cond()?.0;
        while self.eat("&&") {
            let rhs = self.unary_cond()?.0;
            lhs = Cond::And(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    /// `!c`, `not c`, or a single condition; with whether it is a bare
    /// comparison (`x == 1`, not in parentheses).
    fn unary_cond(&mut self) -> Result<(Cond, bool), StrErr> {
        self.enter()?;
        let r = self.unary_cond_inner();
        self.depth -= 1;
        r
    }

    fn unary_cond_inner(&mut self) -> Result<(Cond, bool), StrErr> {
        let at = self.here();
        if self.eat("!") {
            // C's `!` binds tighter than a comparison: `!x == 1` is
            // `(!x) == 1` there, and numbers have no `!` here; refuse it
            // rather than read it as `!(x == 1)`.
            let (c, bare) = self.unary_cond()?;
            if bare {
                let end = self.toks[self.pos - 1].1.end;
                return Err(StrErr::new(
                    at.start..end,
                    "`!` applies to the condition right after it, as in C, where `!x == 1` is `(!x) == 1`: put the comparison in parentheses",
                )
                .help("write `!(x == 1)`, or the opposite comparison (`x != 1`; `x == 0` for C's `!x`)"));
            }
            return Ok((Cond::Not(Box::new(c)), false));
        }
        if matches!(self.peek(), Some(Tok::Ident(n)) if n == "not") {
            // The word binds as `!` to one condition, a bare comparison
            // too: `not x == 1 && y` is `!(x == 1) && y`.
            self.pos += 1;
            let (c, _) = self.unary_cond()?;
            return Ok((Cond::Not(Box::new(c)), false));
        }
        self.primary_cond()
    }

    fn primary_cond(&mut self) -> Result<(Cond, bool), StrErr> {
        match self.peek().cloned() {
            Some(Tok::Ident(n)) if n == "cpu_online" || n == "cpu_curr_shares_mm" => {
                if n == "cpu_curr_shares_mm" {
                    self.task_only("cpu_curr_shares_mm()", self.here())?;
                }
                self.pos += 1;
                self.expect("(")?;
                let e = self.expr()?;
                self.expect(")")?;
                return Ok((
                    if n == "cpu_online" {
                        Cond::CpuOnline(e)
                    } else {
                        // cpu_rq(cpu)->curr->mm == current->mm
                        Cond::Cmp(CmpOp::Eq, Expr::CpuCurrMm(Box::new(e)), Expr::CurrentMm)
                    },
                    false,
                ));
            }
            Some(Tok::Ident(n)) if n == "poll_state_synchronize_rcu" => {
                self.task_only("poll_state_synchronize_rcu()", self.here())?;
                self.pos += 1;
                self.expect("(")?;
                let oldstate = self.expr()?;
                self.expect(")")?;
                return Ok((Cond::RcuPollState(oldstate), false));
            }
            Some(Tok::Ident(n)) if n == "spin_is_locked" => {
                let at = self.here();
                self.pos += 1;
                return Ok((self.spin_is_locked(at)?, false));
            }
            Some(Tok::Sym("(")) => {
                // Either a parenthesised condition or an expression that
                // starts with a parenthesis: try the condition first.
                let save = self.pos;
                self.pos += 1;
                if let Ok(c) = self.cond() {
                    if self.eat(")")
                        && !matches!(self.peek(), Some(Tok::Sym(s)) if cmp_op(s).is_some() || bin_op(s).is_some())
                    {
                        return Ok((c, false));
                    }
                }
                self.pos = save;
            }
            _ => {}
        }
        let lhs = self.expr()?;
        let op = match self.peek() {
            Some(Tok::Sym(s)) => cmp_op(s),
            _ => None,
        };
        let Some(op) = op else {
            if let Some(err) = self.word_operator() {
                return Err(err);
            }
            return Err(StrErr::new(
                self.here(),
                format!(
                    "expected a comparison (==, !=, <, <=, >, >=), found {}",
                    self.describe()
                ),
            ));
        };
        self.pos += 1;
        let rhs = self.expr()?;
        Ok((Cond::Cmp(op, lhs, rhs), true))
    }

    /// After `spin_is_locked`: `(LOCK)` or `(LOCK[INDEX])`, a spinlock
    /// (one element of a per-CPU one or of an array).
    fn spin_is_locked(&mut self, at: Range<usize>) -> Result<Cond, StrErr> {
        if let Some(v) = self.view {
            return Err(StrErr::new(
                at,
                format!("`spin_is_locked()` is not available in hooks (hook `{}`): only a task's conditions read a lock word", v.event),
            ));
        }
        self.expect("(")?;
        let here = self.here();
        let Some(Tok::Ident(name)) = self.peek().cloned() else {
            return Err(StrErr::new(
                here,
                format!(
                    "`spin_is_locked(...)` takes a spinlock's name, found {}",
                    self.describe()
                ),
            ));
        };
        let lock = (self.shared)(&name, ObjectType::Spinlock).map_err(|known| {
            StrErr::new(
                here.clone(),
                format!(
                    "`{name}` is not a spinlock; declared: {} (an object of type \"spinlock\")",
                    crate::error::list(&known)
                ),
            )
        })?;
        self.pos += 1;
        let index = if self.eat("[") {
            let from = self.here().start;
            let i = self.expr()?;
            let to = self.toks[self.pos - 1].1.end;
            self.expect("]")?;
            if lock.array.is_none() && !lock.per_cpu {
                return Err(StrErr::new(
                    from..to,
                    format!("`{name}` is one spinlock: write `spin_is_locked({name})`"),
                ));
            }
            // A constant index outside the array (or negative): here; one
            // computed at run time faults as any index does.
            if let Some(v) = const_value(&i, None) {
                let len = lock.array.map_or(i64::MAX, i64::from);
                if v < 0 || v >= len {
                    return Err(StrErr::new(
                        from..to,
                        format!("index {v} is outside `{name}`"),
                    ));
                }
            }
            Some(i)
        } else if let Some(n) = lock.array {
            return Err(StrErr::new(
                here,
                format!("`{name}` is an array of {n} spinlocks: say which one, `{name}[i]`"),
            ));
        } else if lock.per_cpu {
            return Err(StrErr::new(
                here,
                format!("`{name}` is per-CPU: say whose, `{name}[this_cpu()]`"),
            ));
        } else {
            None
        };
        self.expect(")")?;
        Ok(Cond::SpinIsLocked(ObjRef {
            object: lock.id,
            index,
        }))
    }

    /// At `and` or `or` spelled as a word: the error that names C's
    /// spelling.
    fn word_operator(&self) -> Option<StrErr> {
        let Some(Tok::Ident(w)) = self.peek() else {
            return None;
        };
        let c = match w.as_str() {
            "and" => "&&",
            "or" => "||",
            _ => return None,
        };
        Some(
            StrErr::new(
                self.here(),
                format!("`{w}` is not an operator: conditions are joined with C's `&&` and `||`"),
            )
            .help(format!("write `{c}`: `x == 0 {c} y == 1`")),
        )
    }

    fn expr(&mut self) -> Result<Expr, StrErr> {
        self.enter()?;
        let r = self.binary(0);
        self.depth -= 1;
        r
    }

    /// Level 0: `+ -`; level 1: `* / %`.
    fn binary(&mut self, level: u8) -> Result<Expr, StrErr> {
        let mut lhs = if level == 0 {
            self.binary(1)?
        } else {
            self.unary()?
        };
        loop {
            let op = match self.peek() {
                Some(Tok::Sym(s)) => bin_op(s).filter(|(_, l)| *l == level),
                _ => None,
            };
            let Some((op, _)) = op else { return Ok(lhs) };
            self.pos += 1;
            let rhs_start = self.here().start;
            let rhs = if level == 0 {
                self.binary(1)?
            } else {
                self.unary()?
            };
            if matches!(op, BinOp::Div | BinOp::Rem) && const_value(&rhs, None) == Some(0) {
                let end = self.toks[self.pos - 1].1.end;
                return Err(StrErr::new(rhs_start..end, "division by zero"));
            }
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn unary(&mut self) -> Result<Expr, StrErr> {
        if self.eat("-") {
            self.enter()?;
            let e = self.unary();
            self.depth -= 1;
            return Ok(match e? {
                Expr::Const(v) => Expr::Const(v.wrapping_neg()),
                e => Expr::Bin(BinOp::Sub, Box::new(Expr::Const(0)), Box::new(e)),
            });
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr, StrErr> {
        let at = self.here();
        match self.peek().cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Expr::Const(v))
            }
            Some(Tok::Sym("(")) => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                let call = self.peek() == Some(&Tok::Sym("("));
                match (name.as_str(), call) {
                    ("nr_cpus", false) => Ok(Expr::NrCpus),
                    ("task_index" | "group_size" | "current_mm", false) => {
                        self.task_only(&name, at)?;
                        Ok(match name.as_str() {
                            "task_index" => Expr::TaskIndex,
                            "group_size" => Expr::GroupSize,
                            _ => Expr::CurrentMm,
                        })
                    }
                    ("cpu_curr_mm", true) => {
                        self.task_only("cpu_curr_mm()", at)?;
                        self.pos += 1;
                        let cpu = self.expr()?;
                        self.expect(")")?;
                        Ok(Expr::CpuCurrMm(Box::new(cpu)))
                    }
                    ("hash", true) => {
                        self.pos += 1;
                        let x = self.expr()?;
                        self.expect(")")?;
                        Ok(Expr::Hash(Box::new(x)))
                    }
                    ("get_state_synchronize_rcu" | "get_completed_synchronize_rcu", true) => {
                        if name == "get_state_synchronize_rcu" {
                            self.task_only("get_state_synchronize_rcu()", at.clone())?;
                        }
                        self.pos += 1;
                        self.expect(")")?;
                        Ok(if name == "get_state_synchronize_rcu" {
                            Expr::RcuGetState
                        } else {
                            Expr::Const(smpsim_kernel::rcu::RCU_GET_STATE_COMPLETED)
                        })
                    }
                    ("this_cpu", true) | ("random_cpu", true) => {
                        self.pos += 1;
                        self.expect(")")?;
                        Ok(if name == "this_cpu" { Expr::ThisCpu } else { Expr::RandomCpu })
                    }
                    ("task_cpu" | "prev_mm" | "next_mm" | "prev_active_mm", true) => {
                        self.pos += 1;
                        self.hook_view(&name, at)
                    }
                    ("read_once" | "this_cpu_read" | "per_cpu", true) => {
                        self.task_only(&format!("{name}()"), at.clone())?;
                        self.pos += 1;
                        self.shared_read(&name, at)
                    }
                    ("uniform", true) => {
                        self.task_only("uniform()", at)?;
                        self.pos += 1;
                        let lo = self.expr()?;
                        self.expect(",")?;
                        let hi = self.expr()?;
                        self.expect(")")?;
                        Ok(Expr::Uniform(Box::new(lo), Box::new(hi)))
                    }
                    ("this_cpu" | "random_cpu" | "uniform" | "cpu_curr_mm" | "hash"
                    | "get_state_synchronize_rcu" | "get_completed_synchronize_rcu"
                    | "task_cpu" | "prev_mm" | "next_mm" | "prev_active_mm", false) => Err(StrErr::new(
                        at,
                        format!("`{name}` is a function: write `{name}(...)`"),
                    )),
                    ("nr_cpus" | "task_index" | "group_size" | "current_mm", true) => Err(StrErr::new(
                        at,
                        format!("`{name}` is not a function: write it without parentheses"),
                    )),
                    ("cpu_online" | "cpu_curr_shares_mm" | "poll_state_synchronize_rcu" | "spin_is_locked", _) => Err(StrErr::new(
                        at,
                        format!("`{name}(...)` is a condition, not a number"),
                    )),
                    (_, true) => Err(StrErr::new(
                        at,
                        format!("unknown function `{name}`; expected one of this_cpu(), random_cpu(), uniform(a, b), hash(x), read_once(VAR), per_cpu(VAR, CPU), this_cpu_read(VAR), get_state_synchronize_rcu(), get_completed_synchronize_rcu(), and in hooks task_cpu(), prev_mm(), next_mm(), prev_active_mm()"),
                    )),
                    (_, false) => (self.vars)(&name).map(Expr::Var).map_err(|known| {
                        StrErr::new(
                            at,
                            format!(
                                "unknown variable `{name}`; declared variables: {} (declare it in the task's `vars` or with a `set` op)",
                                crate::error::list(&known)
                            ),
                        )
                    }),
                }
            }
            _ => Err(StrErr::new(
                at,
                format!(
                    "expected a number, variable or `(`, found {}",
                    self.describe()
                ),
            )),
        }
    }
}

/// The value of an expression that does not depend on the task or the
/// run, if it has one: constants and arithmetic on them, and `nr_cpus`
/// when it is known. `None` also when the arithmetic would overflow or
/// divide by zero (the kernel model reports that when it happens).
pub(crate) fn const_value(e: &Expr, nr_cpus: Option<u32>) -> Option<i64> {
    match e {
        Expr::Const(v) => Some(*v),
        Expr::NrCpus => nr_cpus.map(i64::from),
        Expr::Hash(x) => const_value(x, nr_cpus).map(smpsim_kernel::program::hash_64_32),
        Expr::Bin(op, a, b) => {
            let (a, b) = (const_value(a, nr_cpus)?, const_value(b, nr_cpus)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div => a.checked_div(b),
                BinOp::Rem => a.checked_rem(b),
            }
        }
        _ => None,
    }
}

fn cmp_op(s: &str) -> Option<CmpOp> {
    Some(match s {
        "==" => CmpOp::Eq,
        "!=" => CmpOp::Ne,
        "<" => CmpOp::Lt,
        "<=" => CmpOp::Le,
        ">" => CmpOp::Gt,
        ">=" => CmpOp::Ge,
        _ => return None,
    })
}

fn bin_op(s: &str) -> Option<(BinOp, u8)> {
    Some(match s {
        "+" => (BinOp::Add, 0),
        "-" => (BinOp::Sub, 0),
        "*" => (BinOp::Mul, 1),
        "/" => (BinOp::Div, 1),
        "%" => (BinOp::Rem, 1),
        _ => return None,
    })
}

fn parse_with<T>(
    s: &str,
    vars: &Resolver<'_>,
    shared: &SharedResolver<'_>,
    view: Option<HookView>,
    f: impl FnOnce(&mut Parser<'_, '_>) -> Result<T, StrErr>,
) -> Result<T, StrErr> {
    let toks = lex(s)?;
    if toks.is_empty() {
        return Err(StrErr::new(0..s.len(), "empty expression"));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        len: s.len(),
        depth: 0,
        vars,
        shared,
        view,
    };
    let v = f(&mut p)?;
    if let Some(err) = p.word_operator() {
        return Err(err);
    }
    if p.pos < p.toks.len() {
        // `2us` where a count is expected lexes as `2` then `us`: name the
        // mistake (a duration given to a number) rather than the stray unit.
        let unit_after_number = p.pos > 0
            && matches!(p.toks[p.pos - 1].0, Tok::Int(_))
            && matches!(p.peek(), Some(Tok::Ident(u)) if crate::duration::UNITS.iter().any(|(n, _)| n == u));
        if unit_after_number {
            let whole = p.toks[p.pos - 1].1.start..p.here().end;
            return Err(StrErr::new(
                whole.clone(),
                format!("`{}` is a duration where a number is expected", &s[whole]),
            ));
        }
        return Err(StrErr::new(
            p.here(),
            format!(
                "unexpected {} after the end of the expression",
                p.describe()
            ),
        ));
    }
    Ok(v)
}

/// Parses an integer expression (in a hook with `view`).
pub(crate) fn parse_expr(
    s: &str,
    vars: &Resolver<'_>,
    shared: &SharedResolver<'_>,
    view: Option<HookView>,
) -> Result<Expr, StrErr> {
    parse_with(s, vars, shared, view, |p| p.expr())
}

/// Parses a condition (in a hook with `view`).
pub(crate) fn parse_cond(
    s: &str,
    vars: &Resolver<'_>,
    shared: &SharedResolver<'_>,
    view: Option<HookView>,
) -> Result<Cond, StrErr> {
    parse_with(s, vars, shared, view, |p| p.cond())
}

/// Whether `s` can name a variable.
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_shared(_: &str, _: ObjectType) -> Result<SharedObject, Vec<String>> {
        Err(Vec::new())
    }

    fn vars(name: &str) -> Result<Slot, Vec<String>> {
        match name {
            "x" => Ok(0),
            "y" => Ok(1),
            _ => Err(vec!["x".into(), "y".into()]),
        }
    }

    fn e(s: &str) -> Result<Expr, StrErr> {
        parse_expr(s, &vars, &no_shared, None)
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }

    #[test]
    fn precedence_and_atoms() {
        assert_eq!(
            e("1 + x * 2").unwrap(),
            bin(
                BinOp::Add,
                Expr::Const(1),
                bin(BinOp::Mul, Expr::Var(0), Expr::Const(2))
            )
        );
        assert_eq!(
            e("(1 + y) % nr_cpus").unwrap(),
            bin(
                BinOp::Rem,
                bin(BinOp::Add, Expr::Const(1), Expr::Var(1)),
                Expr::NrCpus
            )
        );
        assert_eq!(
            e("10 - 3 - 2").unwrap(),
            bin(
                BinOp::Sub,
                bin(BinOp::Sub, Expr::Const(10), Expr::Const(3)),
                Expr::Const(2)
            )
        );
        assert_eq!(e("-5").unwrap(), Expr::Const(-5));
        assert_eq!(
            e("uniform(0, group_size)").unwrap(),
            Expr::Uniform(Box::new(Expr::Const(0)), Box::new(Expr::GroupSize))
        );
        assert_eq!(e("this_cpu()").unwrap(), Expr::ThisCpu);
        assert_eq!(e("random_cpu()").unwrap(), Expr::RandomCpu);
        assert_eq!(
            e("task_index / 25").unwrap(),
            bin(BinOp::Div, Expr::TaskIndex, Expr::Const(25))
        );
    }

    #[test]
    fn conditions() {
        let c = |s: &str| parse_cond(s, &vars, &no_shared, None);
        assert_eq!(c("cpu_online(x)").unwrap(), Cond::CpuOnline(Expr::Var(0)));
        assert_eq!(
            c("not cpu_curr_shares_mm(x)").unwrap(),
            Cond::Not(Box::new(Cond::Cmp(
                CmpOp::Eq,
                Expr::CpuCurrMm(Box::new(Expr::Var(0))),
                Expr::CurrentMm
            )))
        );
        assert_eq!(
            c("!(x == 1)").unwrap(),
            Cond::Not(Box::new(Cond::Cmp(CmpOp::Eq, Expr::Var(0), Expr::Const(1))))
        );
        assert_eq!(
            c("(x + 1) >= y").unwrap(),
            Cond::Cmp(
                CmpOp::Ge,
                bin(BinOp::Add, Expr::Var(0), Expr::Const(1)),
                Expr::Var(1)
            )
        );
        assert!(c("x")
            .unwrap_err()
            .message
            .contains("expected a comparison"));
        let err = c("x == 1 and y == 2").unwrap_err();
        assert_eq!(err.range, 7..10);
        assert!(
            err.message.contains("`and` is not an operator"),
            "{}",
            err.message
        );
        assert!(err.help.unwrap_or_default().contains("write `&&`"));
    }

    #[test]
    fn errors_point_at_the_problem() {
        let err = e("x + zz").unwrap_err();
        assert_eq!(err.range, 4..6);
        assert!(err.message.contains("unknown variable `zz`"));
        assert_eq!(e("1 +").unwrap_err().range, 3..3);
        assert_eq!(e("1 $ 2").unwrap_err().range, 2..3);
        assert!(e("foo(1)")
            .unwrap_err()
            .message
            .contains("unknown function"));
        assert!(e("1 2").unwrap_err().message.contains("after the end"));
        assert!(e(&"(".repeat(500))
            .unwrap_err()
            .message
            .contains("too deeply"));
        assert!(e("99999999999999999999").is_err());
        assert!(e("").is_err());
    }

    fn c(s: &str) -> Result<Cond, StrErr> {
        parse_cond(s, &vars, &no_shared, None)
    }

    fn cmp(op: CmpOp, a: Expr, b: Expr) -> Cond {
        Cond::Cmp(op, a, b)
    }

    fn and(a: Cond, b: Cond) -> Cond {
        Cond::And(Box::new(a), Box::new(b))
    }

    fn or(a: Cond, b: Cond) -> Cond {
        Cond::Or(Box::new(a), Box::new(b))
    }

    fn not(a: Cond) -> Cond {
        Cond::Not(Box::new(a))
    }

    /// C's precedence: `!` over comparisons over `&&` over `||`, each
    /// binary one grouping from the left; parentheses override.
    #[test]
    fn logical_operators_take_cs_precedence() {
        let x1 = || cmp(CmpOp::Eq, Expr::Var(0), Expr::Const(1));
        let y2 = || cmp(CmpOp::Lt, Expr::Var(1), Expr::Const(2));
        let on = || Cond::CpuOnline(Expr::Var(0));
        assert_eq!(
            c("x == 1 || y < 2 && cpu_online(x)").unwrap(),
            or(x1(), and(y2(), on()))
        );
        assert_eq!(
            c("x == 1 && y < 2 || cpu_online(x)").unwrap(),
            or(and(x1(), y2()), on())
        );
        assert_eq!(
            c("(x == 1 || y < 2) && cpu_online(x)").unwrap(),
            and(or(x1(), y2()), on())
        );
        assert_eq!(
            c("x == 1 && y < 2 && cpu_online(x)").unwrap(),
            and(and(x1(), y2()), on())
        );
        assert_eq!(
            c("x == 1 || y < 2 || cpu_online(x)").unwrap(),
            or(or(x1(), y2()), on())
        );
        assert_eq!(c("!cpu_online(x) && x == 1").unwrap(), and(not(on()), x1()));
        assert_eq!(c("!(x == 1 || y < 2)").unwrap(), not(or(x1(), y2())));
        assert_eq!(c("!!cpu_online(x)").unwrap(), not(not(on())));
        // The word `not` takes one condition, a bare comparison too.
        assert_eq!(c("not x == 1 && y < 2").unwrap(), and(not(x1()), y2()));
        // Arithmetic binds tighter than the comparison, as before.
        assert_eq!(
            c("x + 1 == 2 && y < 2").unwrap(),
            and(
                cmp(
                    CmpOp::Eq,
                    bin(BinOp::Add, Expr::Var(0), Expr::Const(1)),
                    Expr::Const(2)
                ),
                y2()
            )
        );
    }

    /// `and`/`or` as words, a lone `&` or `|`, an operand missing, and
    /// `!` before a bare comparison (C would read `!x == 1` as
    /// `(!x) == 1`): each a located error saying what to write.
    #[test]
    fn logical_operator_mistakes_are_located() {
        let err = c("x == 0 or y == 1").unwrap_err();
        assert_eq!(err.range, 7..9);
        assert!(err.help.unwrap_or_default().contains("write `||`"));
        let err = c("x == 0 & y == 1").unwrap_err();
        assert_eq!(err.range, 7..8);
        assert!(err.help.unwrap_or_default().contains("`&&`"));
        let err = c("x == 0 | y == 1").unwrap_err();
        assert!(err.help.unwrap_or_default().contains("`||`"));
        let err = c("x == 0 &&").unwrap_err();
        assert_eq!(err.range, 9..9);
        assert!(err.message.contains("found the end"), "{}", err.message);
        let err = c("x == 0 || && y == 1").unwrap_err();
        assert_eq!(err.range, 10..12);
        let err = c("!x == 1").unwrap_err();
        assert_eq!(err.range, 0..7);
        assert!(err.message.contains("(!x) == 1"), "{}", err.message);
        assert!(err.help.unwrap_or_default().contains("!(x == 1)"));
        assert!(c("y < 2 && !x == 1").is_err());
    }
}

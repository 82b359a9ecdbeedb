//! Cpumask variables in scenario code: `cpumask(VAR, MASK)` stores a mask
//! evaluated when the op runs, `for_each_cpu(VAR, MASK) { ... }` loops over
//! one, and `smp_call_function_many` / `flush_tlb_mm_range` take one in
//! `cpus`. Mask variables are a namespace of their own: a name is either a
//! number or a cpumask in a task's code, and using one as the other is a
//! located error.
//!
//! ```text
//! MASK := mm_cpumask | cpu_online_mask | mm_running | lazy_cpus
//!       | flag(PERCPU_VARIABLE) | cpu(EXPR) | VAR
//!       | and(MASK, MASK) | or(MASK, MASK) | andnot(MASK, MASK)
//! ```

use std::ops::Range;

use smpsim_kernel::program::{CpumaskOp, Expr, MaskExpr, MaskSlot, Op};

use super::{need, split_top_level, Emitter, ObjEntry};
use crate::error::{DResult, Diag, StrErr};
use crate::raw::{RawOp, S};

/// The masks a `MASK` can start from, as errors list them.
const SOURCES: &str = "mm_cpumask, cpu_online_mask, mm_running, lazy_cpus, flag(VAR), cpu(EXPR), and(A, B), or(A, B), andnot(A, B), or a cpumask variable";

impl Emitter<'_, '_> {
    /// Declares `var` as a cpumask variable.
    pub(super) fn declare_mask(&mut self, var: &S<String>) -> DResult<()> {
        let name = var.get_ref();
        if self.slots.contains_key(name) {
            return Err(Diag::new(
                var.span(),
                format!("`{name}` is a number in this task's code; it cannot also hold a cpumask"),
            )
            .help("give the cpumask a name of its own"));
        }
        if !self.masks.contains_key(name) {
            if self.masks.len() >= u16::MAX as usize {
                return Err(Diag::new(var.span(), "too many cpumask variables"));
            }
            let slot = self.masks.len() as MaskSlot;
            self.masks.insert(name.clone(), slot);
        }
        Ok(())
    }

    /// A new mask slot no name refers to (a loop's copy).
    fn hidden_mask(&mut self) -> MaskSlot {
        let slot = self.masks.len() as MaskSlot;
        self.masks.insert(format!(" mask{slot}"), slot);
        slot
    }

    /// A `MASK` written at bytes `r` of `v`.
    pub(super) fn mask_expr(&self, v: &S<String>, r: Range<usize>) -> DResult<MaskExpr> {
        let text = &v.get_ref()[r.clone()];
        let lead = text.len() - text.trim_start().len();
        let word = text.trim();
        let r = r.start + lead..r.start + lead + word.len();
        let err = |m: String| self.ctx.at_str(v, StrErr::new(r.clone(), m));
        if let Some(open) = word.find('(') {
            if !word.ends_with(')') {
                return Err(err(format!("expected `)` at the end of `{word}`")));
            }
            let func = word[..open].trim();
            let inner = r.start + open + 1..r.end - 1;
            let parts: Vec<Range<usize>> = split_top_level(&v.get_ref()[inner.clone()])
                .into_iter()
                .map(|p| p.start + inner.start..p.end + inner.start)
                .collect();
            return match func {
                "and" | "or" | "andnot" => {
                    let [a, b] = parts.as_slice() else {
                        return Err(err(format!("`{func}` takes two cpumasks")));
                    };
                    let (a, b) = (
                        Box::new(self.mask_expr(v, a.clone())?),
                        Box::new(self.mask_expr(v, b.clone())?),
                    );
                    Ok(match func {
                        "and" => MaskExpr::And(a, b),
                        "or" => MaskExpr::Or(a, b),
                        _ => MaskExpr::AndNot(a, b),
                    })
                }
                "cpu" => Ok(MaskExpr::Cpu(self.sub_expr(v, inner)?)),
                "flag" => self.flag(v, inner),
                _ => Err(err(format!("unknown cpumask `{func}(...)`"))
                    .help(format!("a cpumask is one of: {SOURCES}"))),
            };
        }
        match word {
            "mm_cpumask" => return Ok(MaskExpr::MmCpumask),
            "cpu_online_mask" => return Ok(MaskExpr::Online),
            "mm_running" => return Ok(MaskExpr::MmRunning),
            "lazy_cpus" => return Ok(MaskExpr::Lazy),
            _ => {}
        }
        if let Some(&slot) = self.masks.get(word) {
            return Ok(MaskExpr::Var(slot));
        }
        if self.slots.contains_key(word) {
            return Err(err(format!("`{word}` is a number, not a cpumask"))
                .help(format!("for the mask of one CPU write cpu({word})")));
        }
        Err(err(format!("unknown cpumask `{word}`"))
            .help(format!("a cpumask is one of: {SOURCES}")))
    }

    /// `flag(VAR)`: the CPUs whose instance of per-CPU variable VAR is set.
    fn flag(&self, v: &S<String>, r: Range<usize>) -> DResult<MaskExpr> {
        let name = v.get_ref()[r.clone()].trim();
        match self.ctx.objects.get(name) {
            Some(&ObjEntry::Lock {
                id,
                per_cpu: true,
                kind: crate::object_type::ObjectType::Variable,
                ..
            }) => Ok(MaskExpr::Flag(id)),
            _ => Err(self
                .ctx
                .at_str(
                    v,
                    StrErr::new(r, format!("`{name}` is not a per-CPU variable")),
                )
                .help("declare it as { type = \"variable\", per_cpu = true }")),
        }
    }

    /// A `cpus` value naming a cpumask variable, if it is one; a number
    /// where a mask must be is an error when `required`.
    pub(super) fn mask_var(&self, v: &S<String>, required: bool) -> DResult<Option<MaskSlot>> {
        let word = v.get_ref().trim();
        if let Some(&slot) = self.masks.get(word) {
            return Ok(Some(slot));
        }
        if !required {
            return Ok(None);
        }
        let what = if self.slots.contains_key(word) {
            format!("`{word}` is a number, not a cpumask")
        } else {
            format!("unknown cpumask variable `{word}`")
        };
        Err(Diag::new(v.span(), what).help("build one first with cpumask(NAME, MASK)"))
    }

    /// An expression error that names a cpumask variable says so.
    pub(super) fn mask_as_number(&self, text: &str, e: StrErr) -> StrErr {
        let name = text.get(e.range.clone()).unwrap_or("").trim();
        if self.masks.contains_key(name) {
            return StrErr::new(
                e.range,
                format!("`{name}` is a cpumask, not a number: use it in `cpus` or for_each_cpu"),
            );
        }
        e
    }
}

/// `cpumask(VAR, MASK)`.
pub(super) fn cpumask(
    e: &mut Emitter<'_, '_>,
    op: &S<RawOp>,
    _: &super::def::OpDef,
) -> DResult<()> {
    let r = op.get_ref();
    let var = need(&r.var, op, "var")?;
    let mask = need(&r.mask, op, "mask")?;
    let slot = e.masks[var.get_ref()];
    let expr = e.mask_expr(mask, 0..mask.get_ref().len())?;
    e.push(Op::Cpumask(CpumaskOp::CpumaskSet { mask: slot, expr }));
    Ok(())
}

/// `for_each_cpu(VAR, MASK) { body }`: the mask is copied when the loop
/// starts; VAR takes each of its CPUs in turn.
pub(super) fn for_each_cpu(
    e: &mut Emitter<'_, '_>,
    op: &S<RawOp>,
    _: &super::def::OpDef,
) -> DResult<()> {
    let r = op.get_ref();
    let var = e.slot_of(need(&r.var, op, "var")?)?;
    let mask = need(&r.mask, op, "mask")?;
    let expr = e.mask_expr(mask, 0..mask.get_ref().len())?;
    let copy = e.hidden_mask();
    e.push(Op::Cpumask(CpumaskOp::CpumaskSet { mask: copy, expr }));
    e.push(Op::Set {
        slot: var,
        expr: Expr::Const(-1),
    });
    let start = e.pc();
    let next = e.push(Op::Cpumask(CpumaskOp::CpumaskNext {
        mask: copy,
        var,
        exit: 0,
    }));
    let breaks = e.loop_body(need(&r.body, op, "body")?.get_ref())?;
    e.push(Op::Jump(start));
    let end = e.pc();
    e.patch_breaks(breaks, end);
    e.ops[next] = Op::Cpumask(CpumaskOp::CpumaskNext {
        mask: copy,
        var,
        exit: end,
    });
    Ok(())
}

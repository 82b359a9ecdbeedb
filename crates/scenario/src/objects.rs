//! `[objects]`: the kernel objects a scenario declares, and the names code
//! refers to them by.

use std::collections::HashMap;

use smpsim_engine::Nanos;
use smpsim_kernel::locking;
use smpsim_kernel::{Layout, LockOptions, ObjectDecl, ObjectKind, Sleeper};

use crate::duration::{parse_duration, MachineCosts};
use crate::error::{list, DResult, Diag, Sources, StrErr};
use crate::object_type::ObjectType;
use crate::ops::{split_lockref, ObjEntry};
use crate::raw::{Entries, RawLine, RawObject, RawSleeper, S};

/// The declared objects: what the kernel gets, and every name (aliases
/// too) for compiling code against.
pub(crate) struct Objects {
    pub decls: Vec<ObjectDecl>,
    pub entries: HashMap<String, ObjEntry>,
    /// In declaration order.
    pub names: Vec<String>,
    /// Objects placed on shared lines or packed.
    pub layout: Layout,
}

/// Assumed size of an `atomic_t` (`int counter`): 4 bytes, so a packed
/// per-CPU array holds 64 / 4 of them per 64-byte line.
const ATOMIC_BYTES: u32 = 4;
/// assumed: a 64-byte cache line (x86, most arm64; `L1_CACHE_BYTES`).
const LINE_BYTES: u32 = 64;

/// What one `[objects]` entry declares.
enum Declared {
    Object(ObjectKind, ObjectType),
    Alias(S<String>),
}

/// Checks and declares the `[objects]` table.
pub(crate) fn declare(
    srcs: &Sources,
    costs: &MachineCosts,
    table: Option<&S<Entries<S<RawObject>>>>,
    max_objects: u64,
) -> DResult<Objects> {
    let mut out = Objects {
        decls: Vec::new(),
        entries: HashMap::new(),
        names: Vec::new(),
        layout: Layout::default(),
    };
    let mut lines: NamedLines = Vec::new();
    for (name, obj) in table.map_or(&[][..], |o| &o.get_ref().0) {
        let n = name.get_ref();
        check_name(name)?;
        let entry = match declared(obj, srcs, costs)? {
            Declared::Alias(to) => ObjEntry::Alias { to },
            Declared::Object(kind, lock_kind) if obj.get_ref().count.is_some() => {
                let len = array_len(obj.get_ref(), out.decls.len(), max_objects)?;
                let first = out.decls.len() as u32;
                out.decls.extend((0..len).map(|i| ObjectDecl {
                    name: format!("{n}[{i}]"),
                    kind: kind.clone(),
                    per_cpu: false,
                }));
                out.layout.arrays.push((first, len));
                ObjEntry::Lock {
                    id: first,
                    per_cpu: false,
                    array: Some(len),
                    kind: lock_kind,
                }
            }
            Declared::Object(kind, lock_kind) => {
                let per_cpu = obj.get_ref().per_cpu.as_ref().is_some_and(|v| *v.get_ref());
                let id = out.decls.len() as u32;
                place(obj.get_ref(), id, &kind, per_cpu, &mut lines, &mut out)?;
                out.decls.push(ObjectDecl {
                    name: n.clone(),
                    kind,
                    per_cpu,
                });
                ObjEntry::Lock {
                    id: (out.decls.len() - 1) as u32,
                    per_cpu,
                    array: None,
                    kind: lock_kind,
                }
            }
        };
        out.names.push(n.clone());
        out.entries.insert(n.clone(), entry);
    }
    check_aliases(srcs, &out.entries, &out.names)?;
    let straddling: Vec<u32> = lines
        .iter()
        .flat_map(|(_, objs)| objs.iter())
        .filter(|&&(_, on)| on == OnLine::WaitLock)
        .map(|&(id, _)| id)
        .collect();
    for (line, objs) in lines {
        if line.get_ref() == CSD_LINE {
            out.layout.csd_line = Some(csd_line(&line, &objs, &out)?);
            if objs.len() < 2 {
                continue;
            }
        }
        // An rwsem's second line is the line of its `wait_lock`, alone or
        // with atomics beside it.
        if let Some(&(sem, _)) = objs.iter().find(|&&(_, on)| on == OnLine::WaitLock) {
            let beside = objs.iter().map(|&(id, _)| id).filter(|&id| id != sem);
            out.layout.split.push((sem, beside.collect()));
            continue;
        }
        if objs.len() < 2 && straddling.contains(&objs[0].0) {
            // The first line of an rwsem on two, with nothing else on it:
            // the rwsem's own line, as without a layout.
            continue;
        }
        if objs.len() < 2 {
            return Err(Diag::new(
                line.span(),
                format!(
                    "line `{}` has only one object on it; a line is named by the objects that share it",
                    line.get_ref()
                ),
            )
            .help("drop `line` for an object on a line of its own (the default), or name the same line on its neighbours"));
        }
        // The host (the object whose `Line` the others use) is the lock,
        // if there is one.
        let mut ids: Vec<u32> = objs.iter().map(|&(id, _)| id).collect();
        if let Some(at) = objs.iter().position(|&(_, on)| on == OnLine::Lock) {
            let host = ids.remove(at);
            ids.insert(0, host);
        }
        out.layout.lines.push(ids);
    }
    Ok(out)
}

/// The line name that places objects beside each CPU's `csd_data`
/// (kernel/smp.c: `DEFINE_PER_CPU_SHARED_ALIGNED(call_single_data_t,
/// csd_data)`), the CSD `smp_call_function_single()` sends.
const CSD_LINE: &str = "csd_data";

/// The per-CPU atomic whose instance i is on CPU i's `csd_data` line (the
/// IPI model then makes its CSD traffic transactions on that line): the
/// line's objects must be per-CPU, and one an atomic.
fn csd_line(line: &S<String>, objs: &[(u32, OnLine)], out: &Objects) -> DResult<u32> {
    if let Some(&(g, _)) = objs
        .iter()
        .find(|&&(id, _)| !out.decls[id as usize].per_cpu)
    {
        return Err(Diag::new(
            line.span(),
            format!(
                "`{}` is not per-CPU; `csd_data` is per-CPU data: only per-CPU objects share its line (CPU i's instance with CPU i's csd)",
                out.decls[g as usize].name
            ),
        ));
    }
    objs.iter()
        .map(|&(id, _)| id)
        .find(|&id| out.decls[id as usize].kind == ObjectKind::Atomic)
        .ok_or_else(|| {
            Diag::new(
                line.span(),
                "line `csd_data` needs a per-CPU `atomic` on it: the model reaches the csd's line through one",
            )
            .help("add the neighbouring field as `{ type = \"atomic\", per_cpu = true, line = \"csd_data\" }`")
        })
}

/// Each named line: its name where first used, and its objects (id,
/// what of it is there) in declaration order.
type NamedLines = Vec<(S<String>, Vec<(u32, OnLine)>)>;

/// What of an object a named line holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnLine {
    /// An atomic (a field beside a lock).
    Atomic,
    /// A lock's word (all of it, or an rwsem's `count`, `owner` and
    /// `osq` when it straddles two lines).
    Lock,
    /// The `wait_lock` and `wait_list` of an rwsem on two lines.
    WaitLock,
}

/// An object's `line` and `stride`, checked and recorded.
fn place(
    o: &RawObject,
    id: u32,
    kind: &ObjectKind,
    per_cpu: bool,
    lines: &mut NamedLines,
    out: &mut Objects,
) -> DResult<()> {
    let type_name = o.kind.get_ref().as_str();
    if let Some(stride) = &o.stride {
        if !per_cpu {
            return Err(Diag::new(
                stride.span(),
                "`stride` is for a per-CPU array (`per_cpu = true`)",
            ));
        }
        match stride.get_ref().as_str() {
            "line" => {}
            "packed" => {
                if *kind != ObjectKind::Atomic {
                    return Err(Diag::new(
                        stride.span(),
                        format!(
                            "a packed per-CPU `{type_name}` does not fit the model: only atomics ({ATOMIC_BYTES} B, {} to a {LINE_BYTES}-byte line) pack; each lock word keeps a line of its own",
                            LINE_BYTES / ATOMIC_BYTES
                        ),
                    ));
                }
                if let Some(line) = &o.line {
                    return Err(Diag::new(
                        line.span(),
                        "a packed per-CPU array is on its own lines; `line` and `stride = \"packed\"` do not go together",
                    ));
                }
                out.layout.packed.push((id, LINE_BYTES / ATOMIC_BYTES));
            }
            other => {
                return Err(Diag::new(
                    stride.span(),
                    format!("unknown stride `{other}`; expected one of: `line`, `packed`"),
                ))
            }
        }
    }
    let Some(line) = &o.line else {
        return Ok(());
    };
    let names = match line.get_ref() {
        RawLine::One(name) => vec![(
            S::new(line.span(), name.clone()),
            on_line(line, kind, type_name)?,
        )],
        RawLine::Many(names) => two_lines(line, names, kind, type_name)?,
    };
    for (line, on) in names {
        add_to_line(&line, id, on, per_cpu, lines, out)?;
    }
    Ok(())
}

/// What of an object of `kind` a one-name `line` puts on that line, or
/// why it cannot be placed.
fn on_line(line: &S<RawLine>, kind: &ObjectKind, type_name: &str) -> DResult<OnLine> {
    match kind {
        ObjectKind::Atomic => Ok(OnLine::Atomic),
        ObjectKind::Spinlock { .. }
        | ObjectKind::Mutex { .. }
        | ObjectKind::Rwsem { .. }
        | ObjectKind::Semaphore { .. }
        | ObjectKind::Seqcount => Ok(OnLine::Lock),
        ObjectKind::Sleeping { kind, .. } if kind.info().id != locking::percpu_rwsem::KIND.id => {
            Ok(OnLine::Lock)
        }
        ObjectKind::Sleeping { .. } => Err(Diag::new(
            line.span(),
            format!(
                "a `{type_name}` has no lock word on a shared line in the model: its readers count per CPU and its writer waits for a grace period"
            ),
        )
        .help("put its neighbours (atomics) on a line of their own, or model the word the patch moves as an `atomic` on `line`")),
        _ => Err(Diag::new(
            line.span(),
            format!(
                "a `{type_name}` cannot be placed on a shared line; locks (spinlock, rwlock, mutex, rt_mutex, rwsem, semaphore, seqcount) and atomics can"
            ),
        )),
    }
}

/// `line = ["a", "b"]`: an rwsem across two lines, `count`, `owner` and
/// `osq` on "a", `wait_lock` and `wait_list` on "b" (struct rw_semaphore,
/// include/linux/rwsem.h, in that order).
fn two_lines(
    line: &S<RawLine>,
    names: &[S<toml::Value>],
    kind: &ObjectKind,
    type_name: &str,
) -> DResult<Vec<(S<String>, OnLine)>> {
    if !matches!(kind, ObjectKind::Rwsem { .. }) {
        return Err(Diag::new(
            line.span(),
            format!(
                "two line names put an rwsem's `count` and its `wait_lock` on two lines; `{type_name}` objects sit on one line in the model"
            ),
        )
        .help("give one name: `line = \"NAME\"`"));
    }
    if names.len() != 2 {
        return Err(Diag::new(
            line.span(),
            format!(
                "an rwsem on two lines takes exactly two names, `line = [\"COUNT_LINE\", \"WAIT_LOCK_LINE\"]`; this array has {}",
                names.len()
            ),
        )
        .help("the first line holds `count`, `owner` and `osq`, the second `wait_lock` and `wait_list`; one name (`line = \"NAME\"`) puts all of it on one line"));
    }
    let mut out = Vec::with_capacity(2);
    for (name, on) in names.iter().zip([OnLine::Lock, OnLine::WaitLock]) {
        let Some(text) = name.get_ref().as_str() else {
            return Err(Diag::new(
                name.span(),
                format!(
                    "a line is named by a string; `{}` is {}",
                    name.get_ref(),
                    match name.get_ref().type_str() {
                        t @ ("integer" | "array") => format!("an {t}"),
                        t => format!("a {t}"),
                    }
                ),
            ));
        };
        if out
            .iter()
            .any(|(n, _): &(S<String>, OnLine)| n.get_ref() == text)
        {
            return Err(Diag::new(
                name.span(),
                format!("`{text}` names both of the rwsem's lines; the two names must differ"),
            )
            .help("one name (`line = \"NAME\"`) puts the whole rwsem on one line"));
        }
        out.push((S::new(name.span(), text.to_string()), on));
    }
    Ok(out)
}

/// Puts object `id` (`on`: what of it) on the named line `line`, checked
/// against what the line already holds.
fn add_to_line(
    line: &S<String>,
    id: u32,
    on: OnLine,
    per_cpu: bool,
    lines: &mut NamedLines,
    out: &Objects,
) -> DResult<()> {
    let lock = on != OnLine::Atomic;
    let at = match lines
        .iter()
        .position(|(l, _)| l.get_ref() == line.get_ref())
    {
        Some(at) => at,
        None => {
            lines.push((line.clone(), Vec::new()));
            lines.len() - 1
        }
    };
    let objs = &lines[at].1;
    if let Some(&(first, _)) = objs.first() {
        if out.decls[first as usize].per_cpu != per_cpu {
            return Err(Diag::new(
                line.span(),
                format!(
                    "line `{}` holds `{}`, {}per-CPU; a per-CPU object shares lines only with per-CPU objects (instance i with instance i)",
                    line.get_ref(),
                    out.decls[first as usize].name,
                    if per_cpu { "not " } else { "" }
                ),
            ));
        }
    }
    if lock {
        if let Some(&(other, _)) = objs.iter().find(|&&(_, o)| o != OnLine::Atomic) {
            return Err(Diag::new(
                line.span(),
                format!(
                    "line `{}` already holds the lock `{}`; the model puts at most one lock word on a line (atomics beside it)",
                    line.get_ref(),
                    out.decls[other as usize].name
                ),
            ));
        }
    }
    lines[at].1.push((id, on));
    Ok(())
}

/// The most elements one object array may have (as a task group's most
/// tasks): the array is declared element by element.
const MAX_ARRAY: i64 = 1 << 20;

/// An object array's `count`, checked: 1 to [`MAX_ARRAY`], within
/// `max_objects` with the `declared` objects before it, and none of the
/// fields an array does not take.
fn array_len(o: &RawObject, declared: usize, max: u64) -> DResult<u32> {
    let count = o.count.as_ref().expect("an array");
    let refuse = |f: &Option<S<bool>>, what: &str| match f {
        Some(v) if *v.get_ref() => Err(Diag::new(
            v.span(),
            format!("an object array (`count`) cannot be {what}"),
        )),
        _ => Ok(()),
    };
    refuse(
        &o.per_cpu,
        "per-CPU too; declare one array, or one per-CPU object",
    )?;
    let line_or_stride = o.line.as_ref().map(|l| l.span());
    if let Some(span) = line_or_stride.or(o.stride.as_ref().map(|s| s.span())) {
        return Err(Diag::new(
            span,
            "an object array's elements each have a line of their own; `line` and `stride` do not apply to it (yet)",
        ));
    }
    let n = *count.get_ref();
    if !(1..=MAX_ARRAY).contains(&n) {
        return Err(Diag::new(
            count.span(),
            format!("`count` of an object array must be from 1 to {MAX_ARRAY}, not {n}"),
        ));
    }
    if declared as u64 + n as u64 > max {
        return Err(Diag::new(
            count.span(),
            format!("this array brings the scenario past `max_objects` = {max} object instances"),
        )
        .help("if the machine has the memory, raise the bound with `[scenario] max_objects = N`"));
    }
    Ok(n as u32)
}

/// An object name is a plain name: no index, no brackets, no spaces
/// around it.
fn check_name(name: &S<String>) -> DResult<()> {
    let n = name.get_ref();
    if split_lockref(n)
        .map(|(r, i)| r.len() != n.len() || i.is_some())
        .unwrap_or(true)
        || n.contains(['[', ']'])
    {
        return Err(Diag::new(
            name.span(),
            format!("`{n}` cannot be an object name"),
        ));
    }
    Ok(())
}

/// One entry, checked against the fields its type takes.
fn declared(obj: &S<RawObject>, srcs: &Sources, costs: &MachineCosts) -> DResult<Declared> {
    let o = obj.get_ref();
    let type_name = o.kind.get_ref().as_str();
    if type_name == "alias" {
        return alias(obj);
    }
    let Some(ty) = ObjectType::from_name(type_name) else {
        let names: Vec<&str> = ObjectType::names().chain(["alias"]).collect();
        return Err(Diag::new(
            o.kind.span(),
            format!(
                "unknown object type `{type_name}`; expected one of: {}",
                names.join(", ")
            ),
        ));
    };
    check_fields(o, Some(ty))?;
    let (kind, lock_kind) = match ty {
        ObjectType::Mutex => {
            let spin = o.spin.as_ref().map(|v| *v.get_ref()).unwrap_or(true);
            (sleeping_kind(o, type_name, spin)?, ObjectType::Mutex)
        }
        ObjectType::Spinlock | ObjectType::Rwlock => {
            // A spinning lock always spins: `spin` would be meaningless.
            not_for(&o.spin, "spin", type_name)?;
            let lock_kind = if ty == ObjectType::Rwlock {
                ObjectType::Rwlock
            } else {
                ObjectType::Spinlock
            };
            (spinning_kind(o, type_name, srcs, costs)?, lock_kind)
        }
        ObjectType::Atomic => {
            not_for(&o.spin, "spin", type_name)?;
            (ObjectKind::Atomic, ObjectType::Atomic)
        }
        ObjectType::Semaphore => {
            not_for(&o.spin, "spin", type_name)?;
            let initial = initial(o)?;
            (ObjectKind::Semaphore { initial }, ObjectType::Semaphore)
        }
        ObjectType::Rwsem => {
            let spin = o.spin.as_ref().map(|v| *v.get_ref()).unwrap_or(true);
            let reader_spin = o.reader_spin.as_ref().is_some_and(|v| *v.get_ref());
            (ObjectKind::Rwsem { spin, reader_spin }, ObjectType::Rwsem)
        }
        ObjectType::PercpuRwsem => {
            // Readers never spin and writers sleep: nothing to choose.
            not_for(&o.spin, "spin", type_name)?;
            let kind = ObjectKind::Sleeping {
                kind: locking::percpu_rwsem::KIND.handle(),
                spin: false,
            };
            (kind, ObjectType::PercpuRwsem)
        }
        ObjectType::Seqcount => {
            not_for(&o.spin, "spin", type_name)?;
            (ObjectKind::Seqcount, ObjectType::Seqcount)
        }
        ObjectType::Registered(t) => {
            refused(o, t)?;
            (ObjectKind::Registered(t), ty)
        }
        ObjectType::Variable => {
            not_for(&o.spin, "spin", type_name)?;
            let initial = o.initial.as_ref().map_or(0, |v| *v.get_ref());
            (ObjectKind::Variable { initial }, ObjectType::Variable)
        }
    };
    Ok(Declared::Object(kind, lock_kind))
}

/// The fields a registered type refuses (its entry's `refuses`), each
/// with the type's reason.
fn refused(o: &RawObject, t: smpsim_kernel::ObjType) -> DResult<()> {
    let info = t.info();
    for &(field, why) in info.refuses {
        let Some(span) = given(o, field) else {
            continue;
        };
        let name = info.name;
        let msg = if field == "count" {
            format!("a `{name}` cannot be an array: {why}")
        } else {
            format!("`{field}` is not a field of a `{name}` object: {why}")
        };
        return Err(Diag::new(span, msg));
    }
    Ok(())
}

/// Where field `field` of an `[objects]` entry is written, if it is: the
/// fields a registered type may refuse (the others are refused by type
/// in [`check_fields`]).
fn given(o: &RawObject, field: &str) -> Option<std::ops::Range<usize>> {
    match field {
        "per_cpu" => o.per_cpu.as_ref().map(|v| v.span()),
        "spin" => o.spin.as_ref().map(|v| v.span()),
        "count" => o.count.as_ref().map(|v| v.span()),
        "line" => o.line.as_ref().map(|v| v.span()),
        "stride" => o.stride.as_ref().map(|v| v.span()),
        _ => None,
    }
}

/// `type = "alias"`: another name for an object or one of its instances.
fn alias(obj: &S<RawObject>) -> DResult<Declared> {
    let o = obj.get_ref();
    check_fields(o, None)?;
    not_for(&o.per_cpu, "per_cpu", "alias")?;
    not_for(&o.spin, "spin", "alias")?;
    let Some(to) = &o.to else {
        return Err(Diag::new(
            obj.span(),
            "an alias needs `to = \"OBJECT\"` or `to = \"OBJECT[INDEX]\"`",
        ));
    };
    Ok(Declared::Alias(to.clone()))
}

/// The fields only some types take, refused on the others (`ty` is `None`
/// for an alias).
fn check_fields(o: &RawObject, ty: Option<ObjectType>) -> DResult<()> {
    use ObjectType::*;
    let type_name = o.kind.get_ref().as_str();
    if !matches!(ty, Some(Spinlock | Rwlock | Mutex)) {
        not_for(&o.lock_kind, "kind", type_name)?;
        not_for(&o.backoff, "backoff", type_name)?;
    }
    if !matches!(ty, Some(Spinlock | Rwlock)) {
        not_for(&o.sleeper, "sleeper", type_name)?;
    }
    if ty.is_none() {
        not_for(&o.count, "count", type_name)?;
        not_for(&o.line, "line", type_name)?;
        not_for(&o.stride, "stride", type_name)?;
    }
    if !matches!(ty, Some(Semaphore | Variable)) {
        not_for(&o.initial, "initial", type_name)?;
    }
    if ty != Some(Rwsem) {
        not_for(&o.reader_spin, "reader_spin", type_name)?;
    }
    if ty.is_some() {
        if let Some(to) = &o.to {
            return Err(Diag::new(to.span(), "`to` is only for `type = \"alias\"`"));
        }
    }
    Ok(())
}

/// A semaphore's `initial` tokens.
fn initial(o: &RawObject) -> DResult<u32> {
    match &o.initial {
        None => Ok(0),
        Some(v) => u32::try_from(*v.get_ref())
            .map_err(|_| Diag::new(v.span(), "`initial` must be a count of tokens, >= 0")),
    }
}

/// An error at a field that the object's type does not take.
fn not_for<T>(f: &Option<S<T>>, field: &str, type_name: &str) -> DResult<()> {
    match f {
        Some(v) => Err(Diag::new(
            v.span(),
            format!("`{field}` is not a field of a `{type_name}` object"),
        )),
        None => Ok(()),
    }
}

/// The implementation of a `spinlock` or `rwlock` object: its `kind` (the
/// registry's default without one) and options, checked against
/// [`locking::LOCK_KINDS`].
fn spinning_kind(
    o: &RawObject,
    type_name: &str,
    srcs: &Sources,
    costs: &MachineCosts,
) -> DResult<ObjectKind> {
    let name = o.lock_kind.as_ref().map(|k| k.get_ref().as_str());
    let Some(info) = locking::find_kind(type_name, name) else {
        let known = list(locking::kind_names(type_name));
        return Err(match &o.lock_kind {
            Some(k) => Diag::new(
                k.span(),
                format!(
                    "unknown {type_name} kind `{}`; expected one of: {known}",
                    k.get_ref()
                ),
            )
            .help(kind_summaries(type_name)),
            None => Diag::new(
                o.kind.span(),
                format!("no {type_name} kind is the default; choose one with `kind`: {known}"),
            ),
        });
    };
    let mut options = LockOptions::default();
    if let Some(b) = &o.backoff {
        kind_takes(o, info, type_name, "backoff", b.span())?;
        options.backoff = *b.get_ref();
    }
    if let Some(s) = &o.sleeper {
        kind_takes(o, info, type_name, "sleeper", s.span())?;
        options.sleeper = Some(sleeper(s, srcs, costs)?);
    }
    Ok(ObjectKind::Spinlock {
        kind: info.handle(),
        options,
    })
}

/// An error at `option` (at `span`) unless the kind `info` takes it,
/// naming the kinds that do.
fn kind_takes(
    o: &RawObject,
    info: &locking::LockKindInfo,
    type_name: &str,
    option: &str,
    span: std::ops::Range<usize>,
) -> DResult<()> {
    if info.options.contains(&option) {
        return Ok(());
    }
    let takers: Vec<&str> = locking::LOCK_KINDS
        .iter()
        .filter(|k| k.options.contains(&option))
        .map(|k| k.name)
        .collect();
    let which = if o.lock_kind.is_some() {
        format!("`{}`", info.name)
    } else {
        format!("`{}` (the default {type_name})", info.name)
    };
    Err(Diag::new(
        span,
        format!(
            "kind {which} has no `{option}` option; only {} take it",
            list(&takers)
        ),
    )
    .help(kind_summaries(type_name)))
}

/// `sleeper = { max_active_spin = N, pause = "DURATION", sleep = "DURATION" }`:
/// all three required; `pause` and `sleep` above zero (`max_active_spin = 0`
/// is a waiter that sleeps at its first wait).
fn sleeper(s: &S<RawSleeper>, srcs: &Sources, costs: &MachineCosts) -> DResult<Sleeper> {
    const FORM: &str = "sleeper = { max_active_spin = 4000, pause = \"4ns\", sleep = \"550us\" }";
    let r = s.get_ref();
    let missing = |field: &str| {
        Diag::new(s.span(), format!("`sleeper` needs `{field}`")).help(format!(
            "all three fields: {FORM} (waits that pause, one pause, one sleep)"
        ))
    };
    let Some(spins) = &r.max_active_spin else {
        return Err(missing("max_active_spin"));
    };
    let max_active_spin = u32::try_from(*spins.get_ref()).map_err(|_| {
        Diag::new(
            spins.span(),
            format!(
                "`max_active_spin` must be a count of pauses from 0 to {}, not {}",
                u32::MAX,
                spins.get_ref()
            ),
        )
    })?;
    let positive = |v: &Option<S<String>>, field: &str| -> DResult<Nanos> {
        let Some(v) = v else {
            return Err(missing(field));
        };
        let n = parse_duration(v.get_ref(), costs).map_err(|e| {
            let span = srcs.sub_span(&v.span(), v.get_ref(), e.range.clone());
            e.at(span)
        })?;
        if n == 0 {
            return Err(Diag::new(
                v.span(),
                format!("`{field}` must be greater than zero"),
            ));
        }
        Ok(n)
    };
    let pause = positive(&r.pause, "pause")?;
    let sleep = positive(&r.sleep, "sleep")?;
    Ok(Sleeper {
        max_active_spin,
        pause,
        sleep,
    })
}

/// The sleeping-lock kind of a `mutex` object: its `kind` (the type's
/// own without one), checked against [`locking::SLEEPING_KINDS`].
fn sleeping_kind(o: &RawObject, type_name: &str, spin: bool) -> DResult<ObjectKind> {
    let Some(k) = &o.lock_kind else {
        return Ok(ObjectKind::Mutex { spin });
    };
    match locking::find_sleeping_kind(type_name, Some(k.get_ref())) {
        Some(info) if info.default => Ok(ObjectKind::Mutex { spin }),
        Some(info) => Ok(ObjectKind::Sleeping {
            kind: info.handle(),
            spin,
        }),
        None => {
            let kinds: Vec<String> = locking::SLEEPING_KINDS
                .iter()
                .filter(|i| i.object_type == type_name)
                .map(|i| format!("`{}`: {}", i.name, i.summary))
                .collect();
            Err(Diag::new(
                k.span(),
                format!(
                    "unknown {type_name} kind `{}`; expected one of: {}",
                    k.get_ref(),
                    list(locking::sleeping_kind_names(type_name))
                ),
            )
            .help(format!("{type_name} kinds: {}", kinds.join("; "))))
        }
    }
}

/// One line per implementation of `type_name`, for help texts.
fn kind_summaries(type_name: &str) -> String {
    let kinds: Vec<String> = locking::LOCK_KINDS
        .iter()
        .filter(|k| k.object_type == type_name)
        .map(|k| {
            let options = if k.options.is_empty() {
                String::new()
            } else {
                format!(" [options: {}]", k.options.join(", "))
            };
            format!(
                "`{}`{}{options}: {}",
                k.name,
                if k.default { " (default)" } else { "" },
                k.summary
            )
        })
        .collect();
    format!("{type_name} kinds: {}", kinds.join("; "))
}

/// Every alias must lead to a declared object without a cycle.
fn check_aliases(
    srcs: &Sources,
    entries: &HashMap<String, ObjEntry>,
    names: &[String],
) -> DResult<()> {
    for start in names {
        let mut seen = vec![start.as_str()];
        let mut cur = start.as_str();
        while let Some(ObjEntry::Alias { to }) = entries.get(cur) {
            let (r, _) = split_lockref(to.get_ref()).map_err(|e: StrErr| {
                let span = srcs.sub_span(&to.span(), to.get_ref(), e.range.clone());
                e.at(span)
            })?;
            let target = &to.get_ref()[r.clone()];
            if !entries.contains_key(target) {
                return Err(Diag::new(
                    srcs.sub_span(&to.span(), to.get_ref(), r),
                    format!("unknown object `{target}`"),
                )
                .help(format!("declared objects: {}", list(names))));
            }
            if seen.contains(&target) {
                return Err(Diag::new(
                    to.span(),
                    format!("aliases form a cycle: {} -> {target}", seen.join(" -> ")),
                ));
            }
            seen.push(target);
            cur = target;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field a registered type refuses is one [`given`] finds: a
    /// name it does not know would be refused nowhere.
    #[test]
    fn registered_types_refuse_fields_that_exist() {
        let raw: RawObject = toml::from_str(
            "type = \"x\"\nper_cpu = true\nspin = true\ncount = 2\nline = \"l\"\nstride = \"line\"",
        )
        .unwrap();
        for t in smpsim_kernel::ObjType::all() {
            for (field, _) in t.info().refuses {
                assert!(given(&raw, field).is_some(), "{}: `{field}`", t.info().name);
            }
        }
    }
}

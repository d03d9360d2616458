//! `approval_rules` of a tool entry: CEL expressions over a call's
//! arguments and its run that approve, decline or ask for a call before a
//! person is asked. The first rule whose `when` holds decides; a rule that
//! fails to evaluate does not match (and is logged).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::objects::{Key, Map};
use serde::Deserialize;
use serde_json::Value as Json;

/// One rule as `agentd.toml` writes it:
/// `{ when = "args.amount < 100", then = "approve", reason = "..." }`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRuleSpec {
    /// A CEL expression over `args`, `run.agent_id`, `run.thread_id` and
    /// `run.metadata` that evaluates to a bool.
    pub when: String,
    pub then: RuleDecision,
    /// Why; a declined call's result ends with it.
    #[serde(default)]
    pub reason: String,
}

/// What a matching rule does with a call.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RuleDecision {
    /// The call runs without asking.
    Approve,
    /// The call does not run: the model gets an error result.
    Decline,
    /// The call waits for a person's approval.
    Ask,
}

/// A compiled rule.
#[derive(Clone, Debug)]
pub struct ApprovalRule {
    /// Its place in the tool entry's list, from 0.
    pub index: usize,
    pub when: String,
    pub then: RuleDecision,
    pub reason: String,
    program: Arc<cel::Program>,
}

/// The run a call is made in, as rules see it (`run.*`).
#[derive(Clone, Copy, Debug)]
pub struct RuleRun<'a> {
    pub agent_id: &'a str,
    /// Empty for a run outside a thread.
    pub thread_id: &'a str,
    pub metadata: &'a BTreeMap<String, String>,
}

/// The fields of `run` a rule may name.
const RUN_FIELDS: [&str; 3] = ["agent_id", "thread_id", "metadata"];

static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

impl ApprovalRule {
    /// Compiles a rule; the error says what is wrong with its `when`.
    pub fn compile(index: usize, spec: &ApprovalRuleSpec) -> Result<Self, String> {
        let program = ENV.compile(&spec.when).map_err(|error| {
            let error = error.to_string();
            format!("`when` does not compile: {}", error.trim())
        })?;
        check_names(program.expression(), &mut Vec::new())?;
        Ok(Self {
            index,
            when: spec.when.clone(),
            then: spec.then,
            reason: spec.reason.clone(),
            program: Arc::new(program),
        })
    }

    /// Whether the rule holds for a call: an evaluation that fails or does
    /// not give a bool is an error.
    pub fn holds(&self, args: &Json, run: RuleRun<'_>) -> Result<bool, String> {
        let mut context = cel::Context::with_env(Arc::clone(&ENV));
        context.add_variable_from_value("args", json_value(args));
        let metadata: HashMap<Key, cel::Value> = run
            .metadata
            .iter()
            .map(|(key, value)| (Key::from(key.as_str()), cel::Value::from(value.as_str())))
            .collect();
        let run_value: HashMap<Key, cel::Value> = HashMap::from([
            (Key::from("agent_id"), cel::Value::from(run.agent_id)),
            (Key::from("thread_id"), cel::Value::from(run.thread_id)),
            (Key::from("metadata"), cel::Value::Map(Map::from(metadata))),
        ]);
        context.add_variable_from_value("run", cel::Value::Map(Map::from(run_value)));
        match self.program.execute(&context) {
            Ok(cel::Value::Bool(holds)) => Ok(holds),
            Ok(other) => Err(format!("`when` gave {:?}, not a bool", other.type_of())),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// Decides a call by the first rule that holds; rules that fail are
/// logged and skipped. `None`: no rule decides.
pub(super) fn decide<'r>(
    rules: &'r [ApprovalRule],
    agent: &str,
    tool: &str,
    args: &Json,
    run: RuleRun<'_>,
) -> Option<&'r ApprovalRule> {
    rules.iter().find(|rule| match rule.holds(args, run) {
        Ok(holds) => holds,
        Err(error) => {
            tracing::warn!(
                agent,
                tool,
                rule = rule.index,
                when = %rule.when,
                %error,
                "an approval rule failed to evaluate: it does not match"
            );
            false
        }
    })
}

/// Refuses any variable but `args` and `run`, and any field of `run` but
/// [`RUN_FIELDS`]; `bound` holds the comprehension variables in scope.
fn check_names(expr: &IdedExpr, bound: &mut Vec<String>) -> Result<(), String> {
    match &expr.expr {
        Expr::Ident(name) => {
            if name.starts_with('@') || bound.iter().any(|b| b == name) {
                return Ok(());
            }
            match name.as_str() {
                "args" => Ok(()),
                "run" => Err("use a field of `run`: run.agent_id, run.thread_id or run.metadata".to_owned()),
                other => Err(format!(
                    "unknown variable `{other}`: a rule reads args, run.agent_id, run.thread_id and run.metadata"
                )),
            }
        }
        Expr::Select(select) => {
            if let Expr::Ident(name) = &select.operand.expr {
                if name == "run" && !bound.iter().any(|b| b == name) {
                    return if RUN_FIELDS.contains(&select.field.as_str()) {
                        Ok(())
                    } else {
                        Err(format!(
                            "unknown field `run.{}`: a rule reads run.agent_id, run.thread_id and run.metadata",
                            select.field
                        ))
                    };
                }
            }
            check_names(&select.operand, bound)
        }
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                check_names(target, bound)?;
            }
            call.args.iter().try_for_each(|arg| check_names(arg, bound))
        }
        Expr::Comprehension(comp) => {
            check_names(&comp.iter_range, bound)?;
            check_names(&comp.accu_init, bound)?;
            let before = bound.len();
            bound.push(comp.iter_var.clone());
            bound.extend(comp.iter_var2.clone());
            bound.push(comp.accu_var.clone());
            let inner = [&comp.loop_cond, &comp.loop_step, &comp.result]
                .into_iter()
                .try_for_each(|e| check_names(e, bound));
            bound.truncate(before);
            inner
        }
        Expr::List(list) => list.elements.iter().try_for_each(|e| check_names(e, bound)),
        Expr::Map(map) => map.entries.iter().try_for_each(|e| check_entry(&e.expr, bound)),
        Expr::Struct(object) => object
            .entries
            .iter()
            .try_for_each(|e| check_entry(&e.expr, bound)),
        Expr::Literal(_) | Expr::Unspecified => Ok(()),
    }
}

fn check_entry(entry: &EntryExpr, bound: &mut Vec<String>) -> Result<(), String> {
    match entry {
        EntryExpr::StructField(field) => check_names(&field.value, bound),
        EntryExpr::MapEntry(entry) => {
            check_names(&entry.key, bound)?;
            check_names(&entry.value, bound)
        }
    }
}

/// A JSON value as CEL sees it: integers are `int` (or `uint` past
/// `int`'s range), other numbers `double`.
fn json_value(value: &Json) -> cel::Value {
    match value {
        Json::Null => cel::Value::Null,
        Json::Bool(b) => cel::Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => cel::Value::from(s.as_str()),
        Json::Array(items) => cel::Value::List(Arc::new(items.iter().map(json_value).collect())),
        Json::Object(fields) => {
            let map: HashMap<Key, cel::Value> = fields
                .iter()
                .map(|(key, value)| (Key::from(key.as_str()), json_value(value)))
                .collect();
            cel::Value::Map(Map::from(map))
        }
    }
}

/// The tools whose calls rules decide, by tool name.
pub type ToolRules = HashMap<String, Arc<[ApprovalRule]>>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(when: &str) -> Result<ApprovalRule, String> {
        ApprovalRule::compile(
            0,
            &ApprovalRuleSpec {
                when: when.to_owned(),
                then: RuleDecision::Approve,
                reason: String::new(),
            },
        )
    }

    fn holds(when: &str, args: Json, metadata: &[(&str, &str)]) -> Result<bool, String> {
        let metadata: BTreeMap<String, String> = metadata
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        rule(when).unwrap().holds(
            &args,
            RuleRun {
                agent_id: "support",
                thread_id: "",
                metadata: &metadata,
            },
        )
    }

    #[test]
    fn rules_read_args_and_the_run() {
        assert_eq!(holds("args.amount < 100", json!({"amount": 5}), &[]), Ok(true));
        assert_eq!(holds("args.amount < 100", json!({"amount": 500}), &[]), Ok(false));
        assert_eq!(
            holds("args.amount < 100.5", json!({"amount": 5.5}), &[]),
            Ok(true)
        );
        assert_eq!(
            holds(
                "args.to.endsWith('@example.com')",
                json!({"to": "a@example.com"}),
                &[]
            ),
            Ok(true)
        );
        assert_eq!(
            holds(
                "args.items.all(i, i.qty <= 2)",
                json!({"items": [{"qty": 1}, {"qty": 2}]}),
                &[]
            ),
            Ok(true)
        );
        assert_eq!(
            holds("run.metadata.env == 'staging'", json!({}), &[("env", "staging")]),
            Ok(true)
        );
        assert_eq!(
            holds("run.agent_id == 'support' && run.thread_id == ''", json!({}), &[]),
            Ok(true)
        );
        assert_eq!(
            holds("has(run.metadata.env)", json!({}), &[]),
            Ok(false),
            "has() tests a key without failing"
        );
    }

    #[test]
    fn failures_are_errors_not_matches() {
        assert!(holds("run.metadata.env == 'staging'", json!({}), &[]).is_err());
        assert!(holds("args.amount < 'x'", json!({"amount": 1}), &[]).is_err());
        assert!(holds("args.amount", json!({"amount": 1}), &[]).is_err());
    }

    #[test]
    fn the_guides_examples_compile() {
        #[derive(Deserialize)]
        struct File {
            agents: Vec<crate::agent::AgentSpec>,
        }
        for (guide, text) in [
            ("approval.md", include_str!("../../docs/approval.md")),
            ("configuration.md", include_str!("../../docs/configuration.md")),
        ] {
            let mut rules = 0;
            for block in text.split("```toml\n").skip(1) {
                let block = block.split("```").next().unwrap();
                if !block.contains("approval_rules") {
                    continue;
                }
                let file: File = toml::from_str(block).unwrap_or_else(|e| panic!("{guide}: {e}"));
                for entry in file.agents.iter().flat_map(|a| &a.tools) {
                    for (index, spec) in entry.approval_rules().iter().enumerate() {
                        ApprovalRule::compile(index, spec).unwrap_or_else(|e| panic!("{guide}: {e}"));
                        rules += 1;
                    }
                }
            }
            assert!(rules > 0, "{guide} has an example with approval_rules");
        }
    }

    #[test]
    fn a_failing_rule_is_skipped_and_logged() {
        #[derive(Clone, Default)]
        struct Log(Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Log {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let log = Log::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let rules = [
            ApprovalRule::compile(
                0,
                &ApprovalRuleSpec {
                    when: "run.metadata.region == 'eu'".into(),
                    then: RuleDecision::Approve,
                    reason: String::new(),
                },
            )
            .unwrap(),
            ApprovalRule::compile(
                1,
                &ApprovalRuleSpec {
                    when: "true".into(),
                    then: RuleDecision::Decline,
                    reason: String::new(),
                },
            )
            .unwrap(),
        ];
        let metadata = BTreeMap::new();
        let run = RuleRun {
            agent_id: "support",
            thread_id: "",
            metadata: &metadata,
        };
        let decided = tracing::subscriber::with_default(subscriber, || {
            decide(&rules, "support", "send_email", &json!({}), run).map(|rule| rule.index)
        });
        assert_eq!(
            decided,
            Some(1),
            "the failing rule does not match; the next decides"
        );
        let log = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        assert!(log.contains("WARN"), "{log}");
        for field in [
            "agent=\"support\"",
            "tool=\"send_email\"",
            "rule=0",
            "No such key: region",
        ] {
            assert!(log.contains(field), "{field} in {log}");
        }
    }

    #[test]
    fn matches_is_there() {
        assert_eq!(
            holds("args.id.matches('^T-[0-9]+$')", json!({"id": "T-42"}), &[]),
            Ok(true)
        );
    }

    #[test]
    fn only_args_and_run_fields_may_be_named() {
        assert!(rule("args.x == 1 && run.metadata.a == 'b'").is_ok());
        assert!(rule("[1, 2].exists(x, x == args.n)").is_ok());
        let error = rule("user == 'x'").unwrap_err();
        assert!(error.contains("unknown variable `user`"), "{error}");
        let error = rule("run.tenant == 'x'").unwrap_err();
        assert!(error.contains("unknown field `run.tenant`"), "{error}");
        let error = rule("size(run) > 0").unwrap_err();
        assert!(error.contains("use a field of `run`"), "{error}");
        let error = rule("args.x ==").unwrap_err();
        assert!(error.contains("does not compile"), "{error}");
    }
}

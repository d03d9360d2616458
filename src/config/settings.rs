//! The machinery behind the settings that a flag, an `AGENTD_*` variable
//! and a key of `agentd.toml` share: the [`settings!`] macro that declares
//! them once, the value types they can have, and how a deprecated spelling
//! is folded into the current one. The settings themselves are declared in
//! `server.rs`; nothing here knows one by name.

use std::path::PathBuf;
use std::time::Duration;

use super::duration;
use super::listen::ListenAddr;

/// Declares the settings of one table of `agentd.toml`, each once: its key
/// (the field's name), flag, variable, default and help (the doc comment).
/// It makes two structs and the code that joins them:
///
/// - `$Layer`, what one source gives: every field an `Option`, with
///   `clap::Args` for the flags, `serde::Deserialize` for the file, and
///   [`Layer::from_env`] for the variables; [`Layer::or`] puts one source
///   over another, field by field, and `resolve` fills in the defaults;
/// - `$Config`, the settings the server runs with: a setting with a
///   default has its type, one with `default none "..."` is an `Option`
///   (the text says what none means, for `--help`).
///
/// A setting renamed since an earlier version lists its former name with
/// `formerly OLD in UNIT, flag "...", env "..."`: the old spelling is read
/// from every source as a plain number of that unit, with a warning, and
/// given together with the new one in one source, it is refused.
macro_rules! settings {
    (@resolved $ty:ty, none) => { Option<$ty> };
    (@resolved $ty:ty) => { $ty };
    (@resolve $value:expr, $ty:ty, $default:literal, none) => { $value };
    (@resolve $value:expr, $ty:ty, $default:literal) => {
        $value.unwrap_or_else(|| $crate::config::settings::default::<$ty>($default))
    };
    (
        $(#[doc = $table_doc:literal])*
        table $table:literal: $Layer:ident => $Config:ident {
            $(
                $(#[doc = $doc:literal])*
                $name:ident: $ty:ty, flag $flag:literal, env $env:literal,
                default $($none:ident)? $default:literal
                $(, formerly $old:ident in $unit:ident, flag $old_flag:literal, env $old_env:literal)?;
            )*
        }
    ) => {
        $(#[doc = $table_doc])*
        ///
        /// What one source (the flags, the environment or the file) gives;
        /// `None`: it says nothing of that setting.
        #[derive(Clone, Debug, Default, PartialEq, clap::Args, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $Layer {
            $(
                $(#[doc = $doc])*
                #[arg(
                    long = $crate::config::settings::long($flag),
                    value_name = $crate::config::settings::value_name($flag),
                    help = $crate::config::settings::help(&[$($doc),*], $default, $env),
                    value_parser = <$ty as $crate::config::settings::SettingValue>::parse,
                )]
                #[serde(default, deserialize_with = "crate::config::settings::deserialize")]
                pub $name: Option<$ty>,
                $(
                    #[doc = concat!(
                        "Deprecated spelling of `", stringify!($name), "`, in ",
                        stringify!($unit), "; [`Layer::fold_deprecated`] moves it there."
                    )]
                    #[arg(long = $crate::config::settings::long($old_flag), hide = true)]
                    #[serde(default)]
                    pub $old: Option<u64>,
                )?
            )*
        }

        $(#[doc = $table_doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $Config {
            $(
                $(#[doc = $doc])*
                pub $name: settings!(@resolved $ty $(, $none)?),
            )*
        }

        impl $crate::config::settings::Layer for $Layer {
            const TABLE: &'static str = $table;

            fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Result<Self, $crate::config::ConfigError> {
                use $crate::config::settings::read_var;
                let layer = Self {
                    $(
                        $name: read_var(var, $env)?,
                        $($old: read_var(var, $old_env)?,)?
                    )*
                };
                layer.fold_deprecated(&$crate::config::settings::Source::Env)
            }

            // A table without deprecated spellings has nothing to fold.
            #[allow(unused_mut, unused_variables)]
            fn fold_deprecated(
                mut self,
                source: &$crate::config::settings::Source,
            ) -> Result<Self, $crate::config::ConfigError> {
                $($(
                    self.$name = $crate::config::settings::renamed(
                        source,
                        $crate::config::settings::Names { key: stringify!($name), flag: $flag, env: $env },
                        self.$name.take(),
                        $crate::config::settings::Names { key: stringify!($old), flag: $old_flag, env: $old_env },
                        self.$old.take().map(|count| $crate::config::duration::Unit::$unit.of(count)),
                    )?;
                )?)*
                Ok(self)
            }

            fn or(self, lower: Self) -> Self {
                Self {
                    $(
                        $name: self.$name.or(lower.$name),
                        $($old: self.$old.or(lower.$old),)?
                    )*
                }
            }
        }

        impl $Layer {
            /// The settings with the defaults filled in for what no source gave.
            pub fn resolve(self) -> $Config {
                $Config {
                    $($name: settings!(@resolve self.$name, $ty, $default $(, $none)?),)*
                }
            }
        }
    };
}

pub(crate) use settings;

/// A table's settings as one source gives them (made by [`settings!`]).
pub trait Layer: Sized {
    /// The table of `agentd.toml` the settings are keys of.
    const TABLE: &'static str;

    /// Reads the `AGENTD_*` variables through `var` (the process
    /// environment, or a map in tests).
    fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Result<Self, super::ConfigError>;

    /// Moves each setting given under its deprecated name to its current
    /// one, with a warning; both names in this one source are an error.
    fn fold_deprecated(self, source: &Source) -> Result<Self, super::ConfigError>;

    /// Each setting this source gives, else the one `lower` gives.
    fn or(self, lower: Self) -> Self;
}

/// Where a layer of settings comes from; it names a setting as that
/// source spells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Flags,
    Env,
    /// A table of the file: `[server]`, `[[agents]] "planner"`, ...
    File(String),
}

/// A setting's three spellings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Names {
    pub key: &'static str,
    /// As the declaration writes it: `--lease-ttl DURATION`.
    pub flag: &'static str,
    pub env: &'static str,
}

impl Source {
    /// The setting as a person writes it in this source.
    fn name(&self, names: &Names) -> String {
        match self {
            Source::Flags => format!("--{}", long(names.flag)),
            Source::Env => names.env.to_owned(),
            Source::File(table) => format!("{} in {table}", names.key),
        }
    }

    /// The setting given `value` in this source.
    fn assignment(&self, names: &Names, value: &str) -> String {
        match self {
            Source::Flags => format!("--{} {value}", long(names.flag)),
            Source::Env => format!("{}={value}", names.env),
            Source::File(_) => format!("{} = \"{value}\"", names.key),
        }
    }
}

/// A duration setting that may come under its deprecated name too.
/// Under that name alone it is taken, with a warning that says how to
/// write it now; under both names it is refused, so that the file or
/// command line says one thing.
pub(crate) fn renamed(
    source: &Source,
    new: Names,
    value: Option<Duration>,
    old: Names,
    deprecated: Option<Duration>,
) -> Result<Option<Duration>, super::ConfigError> {
    match (value, deprecated) {
        (Some(_), Some(_)) => Err(super::ConfigError::SpelledTwice {
            new: source.name(&new),
            old: source.name(&old),
        }),
        (None, Some(duration)) => {
            tracing::warn!(
                "{} is deprecated: write {} instead",
                source.name(&old),
                source.assignment(&new, &duration::short(duration))
            );
            Ok(Some(duration))
        }
        (value, None) => Ok(value),
    }
}

/// [`renamed`] for a key of a file table that has no flag or variable
/// (`[[agents]]`, `[[tools]]`, `[providers.NAME]`, ...).
pub(crate) fn renamed_key(
    table: String,
    new: &'static str,
    value: Option<Duration>,
    old: &'static str,
    deprecated: Option<Duration>,
) -> Result<Option<Duration>, super::ConfigError> {
    let names = |key| Names {
        key,
        flag: "",
        env: "",
    };
    renamed(&Source::File(table), names(new), value, names(old), deprecated)
}

/// [`renamed_key`] for a key whose deprecated spelling counts
/// milliseconds (`timeout_ms`, `startup_timeout_ms`), its error as text.
pub(crate) fn renamed_millis_key(
    table: String,
    new: &'static str,
    value: Option<Duration>,
    old: &'static str,
    millis: Option<u64>,
) -> Result<Option<Duration>, String> {
    renamed_key(
        table,
        new,
        value,
        old,
        millis.map(|ms| duration::Unit::Milliseconds.of(ms)),
    )
    .map_err(|error| error.to_string())
}

/// The `timeout` of a tool or server table: `timeout`, its deprecated
/// spelling `timeout_ms` (with a warning), or `default`; never zero.
pub(crate) fn timeout_key(
    table: String,
    timeout: Option<Duration>,
    timeout_ms: Option<u64>,
    default: Duration,
) -> Result<Duration, String> {
    let timeout = renamed_millis_key(table, "timeout", timeout, "timeout_ms", timeout_ms)?.unwrap_or(default);
    if timeout.is_zero() {
        return Err("timeout: must be more than zero".into());
    }
    Ok(timeout)
}

/// The long flag of a declaration such as `--lease-ttl DURATION`.
pub(crate) fn long(flag: &'static str) -> &'static str {
    let flag = flag.trim_start_matches("--");
    flag.split_once(' ').map_or(flag, |(name, _)| name)
}

/// The value's name in a declaration such as `--lease-ttl DURATION`.
pub(crate) fn value_name(flag: &'static str) -> &'static str {
    flag.split_once(' ').map_or("VALUE", |(_, name)| name)
}

/// `--help` for a setting: its doc comment, default and variable.
pub(crate) fn help(doc: &[&str], default: &str, env: &str) -> String {
    let text: Vec<&str> = doc.iter().map(|line| line.trim()).collect();
    format!("{} [default: {default}] [env: {env}]", text.join(" "))
}

/// A setting's declared default, which is written as a person would
/// write it and so read like one.
pub(crate) fn default<T: SettingValue>(text: &str) -> T {
    T::parse(text).unwrap_or_else(|reason| panic!("the declared default {text:?} is invalid: {reason}"))
}

/// A variable's value, read as its setting's type.
pub(crate) fn read_var<T: SettingValue>(
    var: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> Result<Option<T>, super::ConfigError> {
    var(name)
        .map(|text| T::parse(&text))
        .transpose()
        .map_err(|reason| super::ConfigError::Invalid {
            setting: format!("environment variable {name}"),
            reason,
        })
}

/// `deserialize_with` for a setting in the file.
pub(crate) fn deserialize<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: SettingValue,
{
    T::deserialize(deserializer).map(Some)
}

/// A type a setting can have: how a flag or variable's text is read, and
/// how the file's value is.
pub(crate) trait SettingValue: Sized + Clone + Send + Sync + 'static {
    fn parse(text: &str) -> Result<Self, String>;

    fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

/// Types read from text by `FromStr` and from the file by serde.
macro_rules! from_str_values {
    ($($ty:ty),*) => {$(
        impl SettingValue for $ty {
            fn parse(text: &str) -> Result<Self, String> {
                text.parse().map_err(|error| format!("{text:?}: {error}"))
            }

            fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                serde::Deserialize::deserialize(deserializer)
            }
        }
    )*};
}

from_str_values!(PathBuf, String, bool, u64);

/// An address to listen on is a string in the file too: `"localhost:50051"`.
impl SettingValue for ListenAddr {
    fn parse(text: &str) -> Result<Self, String> {
        text.parse()
    }

    fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A duration, in the file too, is a string: `"30s"`.
impl SettingValue for Duration {
    fn parse(text: &str) -> Result<Self, String> {
        duration::parse(text)
    }

    fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        duration::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_declarations_split_into_name_and_value() {
        assert_eq!(long("--lease-ttl DURATION"), "lease-ttl");
        assert_eq!(long("--config"), "config");
        assert_eq!(value_name("--lease-ttl DURATION"), "DURATION");
        assert_eq!(
            help(&[" How long", " it waits."], "7d", "AGENTD_X"),
            "How long it waits. [default: 7d] [env: AGENTD_X]"
        );
    }
}

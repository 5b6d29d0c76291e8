//! `-o`: one vocabulary for every command, kubectl's (`json`, `yaml`, `name`, `wide`; no `-o` is
//! the output for people). Each command accepts the formats it can print; the names earlier
//! versions used for the default (`table`, `text`) still parse, unlisted.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// A table or sentences for people: what kubectl prints without `-o`.
    #[default]
    Human,
    /// The table with more columns.
    Wide,
    /// `KIND.GROUP/NAME` of each object, as `kubectl get -o name`.
    Name,
    Json,
    Yaml,
}

impl Output {
    fn name(self) -> &'static str {
        match self {
            Output::Human => "table",
            Output::Wide => "wide",
            Output::Name => "name",
            Output::Json => "json",
            Output::Yaml => "yaml",
        }
    }

    fn from_name(name: &str) -> Self {
        match name {
            "wide" => Output::Wide,
            "name" => Output::Name,
            "json" => Output::Json,
            "yaml" => Output::Yaml,
            _ => Output::Human,
        }
    }

    fn possible_value(self) -> PossibleValue {
        match self {
            // Not listed: kubectl has no name for its default, and `-o` is simply left out.
            Output::Human => PossibleValue::new("table").alias("text").hide(true),
            other => PossibleValue::new(other.name()),
        }
    }
}

/// A parser for `-o` that accepts `formats` (and the default's old names).
pub fn accepting(formats: &'static [Output]) -> impl TypedValueParser<Value = Output> {
    let values = std::iter::once(Output::Human).chain(formats.iter().copied()).map(Output::possible_value);
    PossibleValuesParser::new(values).map(|name| Output::from_name(&name))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Probe {
        #[arg(short, long, value_parser = accepting(&[Output::Json, Output::Yaml]))]
        output: Option<Output>,
    }

    #[test]
    fn kubectl_names_parse_and_the_old_ones_still_do() {
        let parse = |args: &[&str]| Probe::try_parse_from(std::iter::once("probe").chain(args.iter().copied()));
        assert_eq!(parse(&[]).unwrap().output, None);
        assert_eq!(parse(&["-o", "json"]).unwrap().output, Some(Output::Json));
        assert_eq!(parse(&["-o=yaml"]).unwrap().output, Some(Output::Yaml));
        assert_eq!(parse(&["-o", "text"]).unwrap().output, Some(Output::Human));
        assert_eq!(parse(&["-o", "table"]).unwrap().output, Some(Output::Human));
        let refused = parse(&["-o", "wide"]).unwrap_err();
        assert_eq!(refused.exit_code(), 2);
        assert!(refused.to_string().contains("[possible values: json, yaml]"), "{refused}");
    }
}

//! The reasoning graph's named enums (memory kinds, relations, task states,
//! confidences) as arguments: their snake_case names, written once in
//! `agora-graph`, are what the command line parses, what JSON carries and
//! what the JSON Schema lists.

use agora_graph::event::Confidence;
use agora_graph::{MemoryKind, Relation, TaskState};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

/// An enum of the graph whose values have names.
pub trait Names: Copy + Send + Sync + 'static {
    /// What a value is, for errors and the schema's name.
    const WHAT: &'static str;
    /// The schema's name.
    const SCHEMA: &'static str;
    /// Every value.
    fn all() -> &'static [Self];
    /// Its name.
    fn name(self) -> &'static str;
}

macro_rules! names {
    ($ty:ty, $what:literal, $schema:literal) => {
        impl Names for $ty {
            const WHAT: &'static str = $what;
            const SCHEMA: &'static str = $schema;
            fn all() -> &'static [Self] {
                &<$ty>::ALL
            }
            fn name(self) -> &'static str {
                <$ty>::name(self)
            }
        }
    };
}
names!(MemoryKind, "memory kind", "MemoryKind");
names!(Relation, "relation", "Relation");
names!(TaskState, "task state", "TaskState");
names!(Confidence, "confidence", "Confidence");

/// A value of a [`Names`] enum, read and written by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named<T>(pub T);

impl<T: Names> Named<T> {
    /// The value named `text`.
    pub fn parse(text: &str) -> Result<Self, String> {
        T::all().iter().find(|v| v.name() == text).map(|v| Named(*v)).ok_or_else(|| {
            let names: Vec<&str> = T::all().iter().map(|v| v.name()).collect();
            format!("unknown {} {text:?}; one of {}", T::WHAT, names.join(", "))
        })
    }

    /// The command line's parser: the names are its possible values.
    pub fn parser() -> impl clap::builder::TypedValueParser<Value = Self> {
        use clap::builder::TypedValueParser;
        clap::builder::PossibleValuesParser::new(T::all().iter().map(|v| v.name())).try_map(|s| Self::parse(&s))
    }
}

impl<T: Names> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<'de, T: Names> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<'de, str>::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl<T: Names> JsonSchema for Named<T> {
    fn schema_name() -> Cow<'static, str> {
        T::SCHEMA.into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = T::all().iter().map(|v| v.name()).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_its_value_and_others_are_refused_with_the_list() {
        for k in MemoryKind::ALL {
            assert_eq!(Named::<MemoryKind>::parse(k.name()), Ok(Named(k)));
            let json = serde_json::to_string(&Named(k)).unwrap();
            assert_eq!(serde_json::from_str::<Named<MemoryKind>>(&json).unwrap(), Named(k));
        }
        let e = Named::<TaskState>::parse("finished").unwrap_err();
        assert!(e.contains("unknown task state") && e.contains("in_progress"), "{e}");
        let schema = serde_json::to_value(schemars::schema_for!(Named<Relation>)).unwrap();
        assert_eq!(schema["enum"].as_array().unwrap().len(), Relation::ALL.len());
    }
}

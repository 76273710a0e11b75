//! Model → tokens. Takes a checked model and cannot fail.
//!
//! `#[tool] async fn add(ctx: &ToolContext, /** doc */ #[arg(range(min = 0))] a: i32) -> i32`
//! expands to, in outline (every path goes through `::toolsmith::__private`):
//!
//! ```text
//! async fn add(ctx: &ToolContext, a: i32) -> i32 { .. }      // docs and #[arg] stripped
//! pub struct Add;                                            // the tool users register
//! const _: () = {
//!     type __ToolsmithParam0 = i32;                          // each field's type, named by
//!                                                            // the derive's bound
//!     #[derive(Deserialize, JsonSchema)]                     // deny_unknown_fields
//!     struct __Args { a: i32 }
//!     const _: () = { assert_param::<i32>(); };              // one per parameter's type
//!     static __PARAMS: [ParamSpec; 1] = [..];                // names, docs, constraints, defaults
//!     static __SPEC: ToolSpec = ..;                          // name, effect, policy, limits, lints
//!     fn __check(a: &__Args, f: &mut Findings)             // typed #[arg] checks, each
//!                                                            // recording what it finds broken
//!     impl Tool for Add {
//!         fn definition(&self) -> &ToolDefinition            // built once (a static OnceLock)
//!                                                            // from __SPEC and schema_of::<__Args>
//!         fn call(&self, arguments, ctx) -> BoxFuture<ToolOutcome>
//!             // parse_arguments::<__Args>(validation, arguments, ctx, __check), then the
//!             // function: awaited for an `async fn`, on `run_blocking` for a plain one;
//!             // its value or error made an outcome (ValueTag / ResultTag)
//!         fn call_inline(..) -> Option<Result<Emitted, ToolError>>
//!             // `#[tool(inline)]` only: the same, in place; `call` wraps it in a ready future
//!     }
//! };
//! ```

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::LitStr;
use syn::spanned::Spanned;

use crate::model::{Number, NumberLit, Param, ToolFn};

pub(crate) fn tool(tool: &ToolFn) -> TokenStream {
    let function = function(tool);
    let unit = unit_struct(tool);
    let ident = tool.struct_ident();

    let fields = tool.params.iter().map(field);
    // Each field's type is required to be readable on the impl, not inside its body: a type
    // that is not a parameter is then reported where the arguments are read (and by
    // `assert_param`, on the type), not as a cascade inside serde's generated code. serde
    // reads the bound from a string and writes it on each of its impls, so the bound names
    // each type by an alias (`__ToolsmithParam0`, ...) and the trait by a local name.
    let type_aliases: Vec<syn::Ident> = (0..tool.params.len())
        .map(|i| format_ident!("__ToolsmithParam{}", i))
        .collect();
    let bound = LitStr::new(
        &type_aliases
            .iter()
            .map(|alias| format!("{alias}: __ToolsmithDeserialize<'de>"))
            .collect::<Vec<_>>()
            .join(", "),
        proc_macro2::Span::call_site(),
    );
    let alias_types = tool.params.iter().map(field_type);
    let read_bound = (!tool.params.is_empty()).then(|| {
        quote! {
            use ::toolsmith::__private::serde::Deserialize as __ToolsmithDeserialize;
            #(type #type_aliases = #alias_types;)*
        }
    });
    let specs = tool.params.iter().map(param_spec);
    let count = tool.params.len();
    let checks = tool
        .params
        .iter()
        .enumerate()
        .flat_map(|(i, p)| checks(i, p));
    let asserts = tool.params.iter().map(|p| {
        let ty = &p.ty;
        quote_spanned!(ty.span()=> ::toolsmith::__private::assert_param::<#ty>();)
    });
    let name = tool.tool_name();
    let (description, from_docs) = match &tool.args.description {
        Some(lit) => (quote!(#lit), false),
        None => (join_docs(&tool.docs), true),
    };

    let output_schema = output_schema(&tool.sig.output);
    let spec_fields = spec_fields(tool);

    let call = call_methods(tool);

    quote! {
        #function
        #unit

        #[doc(hidden)]
        #[allow(non_upper_case_globals, non_camel_case_types, non_snake_case, unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            use ::toolsmith::__private::{ResultKind as _, ValueKind as _};
            #read_bound

            #[derive(::toolsmith::__private::serde::Deserialize, ::toolsmith::__private::schemars::JsonSchema)]
            // The name the runtime's strict reader knows the arguments struct by
            // (`ARGS_STRUCT`): serde's derive already refuses its repeated keys.
            #[serde(crate = "::toolsmith::__private::serde", deny_unknown_fields, rename = "toolsmith::Arguments", bound(deserialize = #bound))]
            #[schemars(crate = "::toolsmith::__private::schemars")]
            struct __Args {
                #(#fields,)*
            }

            const _: () = { #(#asserts)* };

            static __PARAMS: [::toolsmith::__private::ParamSpec; #count] = [#(#specs),*];

            static __SPEC: ::toolsmith::__private::ToolSpec = ::toolsmith::__private::ToolSpec {
                name: #name,
                description: #description,
                description_from_docs: #from_docs,
                params: &__PARAMS,
                output_schema: #output_schema,
                #(#spec_fields,)*
                ..::toolsmith::__private::ToolSpec::DEFAULT
            };

            fn __check(__a: &__Args, __f: &mut ::toolsmith::__private::Findings<'_>) {
                let _ = (&__a, &__f);
                #(#checks)*
            }

            impl ::toolsmith::__private::Tool for #ident {
                fn definition(&self) -> &::toolsmith::__private::ToolDefinition {
                    static __DEF: ::toolsmith::__private::OnceLock<::toolsmith::__private::ToolDefinition> =
                        ::toolsmith::__private::OnceLock::new();
                    ::toolsmith::__private::ToolDefinition::get_or_build(
                        &__DEF,
                        &__SPEC,
                        ::toolsmith::__private::schema_of::<__Args>,
                    )
                }

                #call
            }
        };
    }
}

/// The generated `Tool::call` (and an inline tool's `call_inline`): the arguments read into
/// the parameters' locals, the function run, its return value finished.
fn call_methods(tool: &ToolFn) -> TokenStream {
    let fn_ident = &tool.sig.ident;
    // Locals get their own names: a parameter named like the function must not shadow it.
    let locals: Vec<_> = (0..tool.params.len())
        .map(|i| format_ident!("__p{}", i))
        .collect();
    let fields_idents: Vec<_> = tool.params.iter().map(|p| &p.ident).collect();
    let values: Vec<_> = tool
        .params
        .iter()
        .zip(&locals)
        .map(|(p, local)| call_value(p, local))
        .collect();
    let ctx = tool.takes_context.then(|| quote!(__ctx,));

    let (finish, emit) = finish_and_emit(tool);
    let inline = tool.args.inline.is_some() && tool.sig.asyncness.is_none();
    // The future a call returns, once the arguments are read: the user's async fn finished in
    // an async block, or a sync fn on the blocking pool through the one non-generic
    // `run_blocking` (no per-tool future type at all).
    let run = if tool.sig.asyncness.is_some() {
        quote! {
            ::std::boxed::Box::pin(async move {
                let __out = #fn_ident(#ctx #(#values),*).await;
                #finish
            })
        }
    } else {
        let ctx_param = if tool.takes_context {
            quote!(__ctx)
        } else {
            quote!(_)
        };
        quote! {
            ::std::boxed::Box::pin(::toolsmith::__private::run_blocking(
                __ctx,
                ::std::boxed::Box::new(move |#ctx_param: &::toolsmith::__private::ToolContext| {
                    let __out = #fn_ident(#ctx #(#values),*);
                    #finish
                }),
            ))
        }
    };

    // Reads the arguments into the parameters' locals, or returns `on_error(__err)`.
    let read_arguments = |on_error: TokenStream| {
        quote! {
            let __def = <Self as ::toolsmith::__private::Tool>::definition(self);
            let __Args { #(#fields_idents: #locals),* } =
                match ::toolsmith::__private::parse_arguments::<__Args>(__def.validation(), __arguments, __ctx, __check) {
                    ::core::result::Result::Ok(__args) => __args,
                    ::core::result::Result::Err(__err) => return #on_error,
                };
        }
    };
    // `call` always has this signature; an inline tool also has `call_inline`, which `call`
    // wraps in a ready future.
    let (call_body, call_inline) = if inline {
        let read = read_arguments(quote!(::core::option::Option::Some(
            ::core::result::Result::Err(__err)
        )));
        let body = quote! {
            let __out = ::toolsmith::__private::Tool::call_inline(
                self,
                __arguments,
                __ctx,
                ::toolsmith::__private::Emit::Raw,
            );
            ::std::boxed::Box::pin(::core::future::ready(::toolsmith::__private::inline_outcome(__out)))
        };
        let call_inline = quote! {
            fn call_inline(
                &self,
                __arguments: ::toolsmith::__private::Arguments<'_>,
                __ctx: &::toolsmith::__private::ToolContext,
                __emit: ::toolsmith::__private::Emit<'_>,
            ) -> ::core::option::Option<::core::result::Result<::toolsmith::__private::Emitted, ::toolsmith::__private::ToolError>> {
                let _ = &__ctx;
                #read
                let __out = #fn_ident(#ctx #(#values),*);
                ::core::option::Option::Some(#emit)
            }
        };
        (body, call_inline)
    } else {
        let read = read_arguments(quote!(::std::boxed::Box::pin(::core::future::ready(
            ::toolsmith::__private::ToolOutcome::Error(__err)
        ))));
        (quote!(#read #run), TokenStream::new())
    };
    let call = quote! {
        fn call<'__a>(
            &'__a self,
            __arguments: ::toolsmith::__private::Arguments<'__a>,
            __ctx: &'__a ::toolsmith::__private::ToolContext,
        ) -> ::toolsmith::__private::BoxFuture<'__a, ::toolsmith::__private::ToolOutcome> {
            #call_body
        }

        #call_inline
    };
    call
}

/// The fields of the tool's `ToolSpec` that differ from `ToolSpec::DEFAULT`: only those are
/// written, less code per tool to expand, type-check and keep in the crate's metadata.
fn spec_fields(tool: &ToolFn) -> Vec<TokenStream> {
    let examples = &tool.args.examples;
    let mut spec_fields: Vec<TokenStream> = Vec::new();
    let mut set = |field: &str, value: Option<TokenStream>| {
        if let Some(value) = value {
            let field = format_ident!("{}", field);
            spec_fields.push(quote!(#field: #value));
        }
    };
    let some = |v: Option<TokenStream>| v.map(|v| quote!(::core::option::Option::Some(#v)));
    set(
        "title",
        some(tool.args.title.as_ref().map(|lit| quote!(#lit))),
    );
    let hints = [
        tool.args.read_only,
        tool.args.destructive,
        tool.args.idempotent,
        tool.args.open_world,
    ];
    if hints.iter().any(Option::is_some) {
        let [read_only, destructive, idempotent, open_world] =
            hints.map(|flag| option(flag.map(|b| quote!(#b))));
        set(
            "annotations",
            Some(quote!(::toolsmith::__private::Annotations {
                read_only: #read_only,
                destructive: #destructive,
                idempotent: #idempotent,
                open_world: #open_world,
            })),
        );
    }
    set(
        "effect",
        some(tool.args.effect.as_ref().map(|lit| {
            let variant = match lit.value().as_str() {
                "read" => format_ident!("Read"),
                "destructive" => format_ident!("Destructive"),
                _ => format_ident!("Write"),
            };
            quote!(::toolsmith::__private::Effect::#variant)
        })),
    );
    set(
        "requires_approval",
        tool.args.requires_approval.is_some().then(|| quote!(true)),
    );
    set(
        "long_running",
        tool.args.long_running.is_some().then(|| quote!(true)),
    );
    let levels: Vec<TokenStream> = tool
        .lint_levels
        .iter()
        .map(|(lint, level)| level_tokens(lint, *level))
        .collect();
    set(
        "lint_levels",
        (!levels.is_empty()).then(|| quote!(&[#(#levels),*])),
    );
    set(
        "timeout_ms",
        some(tool.args.timeout_ms.map(|ms| quote!(#ms))),
    );
    set("max_attempts", some(tool.args.attempts.map(|n| quote!(#n))));
    set(
        "concurrency",
        some(tool.args.concurrency.map(|n| quote!(#n))),
    );
    set(
        "sequential",
        tool.args.sequential.is_some().then(|| quote!(true)),
    );
    set(
        "inline",
        (tool.args.inline.is_some() && tool.sig.asyncness.is_none()).then(|| quote!(true)),
    );
    set(
        "stream_args",
        tool.args.stream_args.is_some().then(|| quote!(true)),
    );
    set(
        "show_partial",
        tool.args.show_partial.is_some().then(|| quote!(true)),
    );
    set(
        "fallback",
        some(tool.args.fallback.as_ref().map(|lit| quote!(#lit))),
    );
    let scopes: Vec<_> = tool.args.scopes.iter().flatten().collect();
    set(
        "scopes",
        (!scopes.is_empty()).then(|| quote!(&[#(#scopes),*])),
    );
    set(
        "data_classification",
        some(
            tool.args
                .data_classification
                .as_ref()
                .map(|lit| quote!(#lit)),
        ),
    );
    set(
        "version",
        some(tool.args.version.as_ref().map(|lit| quote!(#lit))),
    );
    set(
        "examples",
        (!examples.is_empty()).then(|| quote!(&[#(#examples),*])),
    );
    let invalid_examples: Vec<TokenStream> = tool
        .args
        .invalid_examples
        .iter()
        .map(|(arguments, error)| quote!((#arguments, #error)))
        .collect();
    set(
        "invalid_examples",
        (!invalid_examples.is_empty()).then(|| quote!(&[#(#invalid_examples),*])),
    );
    set(
        "input_limits",
        some(tool.args.limits.as_ref().map(|limits| {
            let setters = limits.iter().map(|(key, n)| {
                let setter = format_ident!("with_{}", key);
                let n = n.to_string();
                let n = syn::LitInt::new(&format!("{n}usize"), proc_macro2::Span::call_site());
                quote!(.#setter(#n))
            });
            quote!(::toolsmith::__private::InputLimits::DEFAULT #(#setters)*)
        })),
    );
    spec_fields
}

/// What the generated code does with the function's return value `__out`: finish it into a
/// `ToolOutcome`, or emit it into the caller's buffer (an inline tool's `call_into`).
fn finish_and_emit(tool: &ToolFn) -> (TokenStream, TokenStream) {
    let ret_span = match &tool.sig.output {
        syn::ReturnType::Default => tool.sig.ident.span(),
        syn::ReturnType::Type(_, ty) => ty.span(),
    };
    // A return type written `Result<T, E>`: each half is checked at its own type, so that a
    // `T` that is not `Serialize` or an `E` that is not `Into<ToolError>` is reported there.
    // Any other type (an alias included) goes through the kind probe.
    match crate::model::result_parts(&tool.sig.output) {
        Some((ok, err)) => {
            let ok_span = ok.span();
            let err_span = err.map_or(ret_span, Spanned::span);
            let ok_finish = quote_spanned!(ok_span=> ::toolsmith::__private::ValueTag.finish(__v));
            let ok_emit =
                quote_spanned!(ok_span=> ::toolsmith::__private::ValueTag.emit(__v, __emit));
            // The error's conversion, chosen by its type: `Into<ToolError>`, a boxed error,
            // `anyhow::Error`, or a compile error on the user's type.
            let err_into = quote_spanned!(err_span=> {
                #[allow(unused_imports)]
                use ::toolsmith::__private::{
                    ErrorFallback as _, ErrorViaAnyhow as _, ErrorViaBox as _, ErrorViaInto as _,
                };
                (&__e).__toolsmith_error().convert(__e)
            });
            (
                quote! {
                    match __out {
                        ::core::result::Result::Ok(__v) => #ok_finish,
                        ::core::result::Result::Err(__e) => ::toolsmith::__private::ToolOutcome::Error(#err_into),
                    }
                },
                quote! {
                    match __out {
                        ::core::result::Result::Ok(__v) => #ok_emit,
                        ::core::result::Result::Err(__e) => ::core::result::Result::Err(#err_into),
                    }
                },
            )
        }
        None => (
            quote_spanned! {ret_span=>
                (&__out).__toolsmith_kind().finish(__out)
            },
            quote_spanned! {ret_span=>
                (&__out).__toolsmith_kind().emit(__out, __emit)
            },
        ),
    }
}

/// A function returning the JSON Schema of the tool's result data: of `T` for `Result<T, E>`,
/// of the type itself otherwise, when it implements `JsonSchema` (chosen by autoref
/// specialization in `__private`). An `impl Trait` return type cannot be named: no schema.
fn output_schema(output: &syn::ReturnType) -> TokenStream {
    let ty = match output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => {
            let names_impl = ty
                .to_token_stream()
                .into_iter()
                .any(|t| matches!(t, proc_macro2::TokenTree::Ident(ref i) if i == "impl"));
            if names_impl {
                return quote!(|| ::core::option::Option::None);
            }
            quote!(#ty)
        }
    };
    quote! {
        || {
            use ::toolsmith::__private::{OutputOfResult as _, OutputOfResultOpaque as _, OutputOfValue as _, OutputOpaque as _};
            (&&&::toolsmith::__private::OutputProbe::<#ty>::new()).__toolsmith_output_schema()
        }
    }
}

/// The user's function, without parameter docs and `#[arg]`.
pub(crate) fn function(tool: &ToolFn) -> TokenStream {
    let attrs = &tool.attrs;
    let vis = &tool.vis;
    let sig = &tool.sig;
    let body = &tool.body;
    quote! {
        #(#attrs)*
        #vis #sig #body
    }
}

/// `pub struct SearchWeb;`, with the function's visibility.
pub(crate) fn unit_struct(tool: &ToolFn) -> TokenStream {
    let vis = &tool.vis;
    let ident = tool.struct_ident();
    let doc = format!(
        "The `{}` tool, generated by `#[tool]` from the function `{}`. Register it with `Toolbox::with`.",
        tool.tool_name(),
        tool.sig.ident,
    );
    quote! {
        #[doc = #doc]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #ident;
    }
}

/// `concat!(doc1, "\n", doc2, "\n", ...)`, so `include_str!` docs keep working. The runtime
/// trims the trailing newline with the rest of the doc-comment normalization.
fn join_docs(docs: &[syn::Expr]) -> TokenStream {
    if docs.is_empty() {
        return quote!("");
    }
    quote!(::core::concat!(#(#docs, "\n"),*))
}

fn field(param: &Param) -> TokenStream {
    let ident = &param.ident;
    let name = LitStr::new(&param.json_name(), ident.span());
    let ty = field_type(param);
    quote!(#[serde(rename = #name)] #ident: #ty)
}

/// A field's type: the parameter's, or an `Option` of it when it has a default. No
/// `#[serde(default)]`: serde reads a missing `Option` as `None` by itself, and
/// schemars_derive 1.2 expands `default` with an unqualified `Some`.
fn field_type(param: &Param) -> TokenStream {
    let ty = &param.ty;
    if param.args.default.is_some() {
        quote!(::core::option::Option<#ty>)
    } else {
        quote!(#ty)
    }
}

/// The default expression; a string literal is converted with `From` (`default = "en"` for a
/// `String` parameter).
fn default_expr(param: &Param) -> Option<TokenStream> {
    let expr = param.args.default.as_ref()?;
    Some(match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => {
            let ty = &param.ty;
            quote_spanned!(lit.span()=> <#ty as ::toolsmith::__private::StringDefault>::from_default(#lit))
        }
        expr => quote!(#expr),
    })
}

/// The value passed to the function for one parameter.
fn call_value(param: &Param, local: &syn::Ident) -> TokenStream {
    let ident = local;
    let ty = &param.ty;
    match default_expr(param) {
        Some(expr) => quote! {
            match #ident {
                ::core::option::Option::Some(__v) => __v,
                ::core::option::Option::None => { let __d: #ty = #expr; __d }
            }
        },
        None => quote!(#ident),
    }
}

fn level_tokens(lint: &str, level: toolsmith_lint_rules::Level) -> TokenStream {
    let variant = match level {
        toolsmith_lint_rules::Level::Allow => format_ident!("Allow"),
        toolsmith_lint_rules::Level::Warn => format_ident!("Warn"),
        toolsmith_lint_rules::Level::Deny => format_ident!("Deny"),
    };
    quote!((#lint, ::toolsmith::__private::LintLevel::#variant))
}

fn param_spec(param: &Param) -> TokenStream {
    let sensitive = param.args.sensitive.is_some();
    let name = param.json_name();
    let ty = &param.ty;
    let (description, from_docs) = match &param.args.description {
        Some(lit) => (quote!(#lit), false),
        None => (join_docs(&param.docs), true),
    };
    // Only what differs from `ParamSpec::DEFAULT` is written.
    let mut fields = Vec::new();
    let constraints = constraints(param);
    if !constraints.is_empty() {
        fields.push(quote!(constraints: &[#(#constraints),*]));
    }
    let levels: Vec<TokenStream> = param
        .args
        .levels
        .iter()
        .map(|s| level_tokens(s.lint, s.level))
        .collect();
    if !levels.is_empty() {
        fields.push(quote!(lint_levels: &[#(#levels),*]));
    }
    if let Some(expr) = default_expr(param) {
        fields.push(quote! {
            default: ::core::option::Option::Some(|| ::toolsmith::__private::default_value::<#ty>(#expr))
        });
    }
    if sensitive {
        fields.push(quote!(sensitive: true));
    }
    quote! {
        ::toolsmith::__private::ParamSpec {
            name: #name,
            description: #description,
            description_from_docs: #from_docs,
            #(#fields,)*
            ..::toolsmith::__private::ParamSpec::DEFAULT
        }
    }
}

/// The constraints in a fixed order; `checks` indexes them the same way.
fn constraints(param: &Param) -> Vec<TokenStream> {
    let ty = &param.ty;
    let mut out = Vec::new();
    if let Some(length) = &param.args.length {
        let min = option(length.min.as_ref().map(|lit| quote!(#lit)));
        let max = option(length.max.as_ref().map(|lit| quote!(#lit)));
        // Spanned on `length`, so a type without a length is reported on the key.
        let kind = quote!(<#ty as ::toolsmith::__private::HasLength>::KIND);
        out.push(quote! {
            ::toolsmith::__private::Constraint::Length { kind: #kind, min: #min, max: #max }
        });
    }
    if let Some(range) = &param.args.range {
        let [min, max, exclusive_min, exclusive_max] = [
            &range.min,
            &range.max,
            &range.exclusive_min,
            &range.exclusive_max,
        ]
        .map(|bound| option(bound.as_ref().map(bound_tokens)));
        out.push(quote! {
            ::toolsmith::__private::Constraint::Range {
                min: #min, max: #max, exclusive_min: #exclusive_min, exclusive_max: #exclusive_max,
            }
        });
    }
    if let Some(pattern) = &param.args.pattern {
        out.push(quote!(::toolsmith::__private::Constraint::Pattern(#pattern)));
    }
    if param.args.email.is_some() {
        out.push(quote!(::toolsmith::__private::Constraint::Format("email")));
    }
    if param.args.url.is_some() {
        out.push(quote!(::toolsmith::__private::Constraint::Format("uri")));
    }
    out
}

fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

fn bound_tokens(number: &Number) -> TokenStream {
    let sign = number.negative.then(|| quote!(-));
    match &number.lit {
        NumberLit::Int(lit) => {
            let digits = syn::LitInt::new(lit.base10_digits(), lit.span());
            if number.negative {
                quote!(::toolsmith::__private::Bound::Int(#sign #digits))
            } else {
                quote!(::toolsmith::__private::Bound::UInt(#digits))
            }
        }
        NumberLit::Float(lit) => {
            let digits = syn::LitFloat::new(&format!("{}f64", lit.base10_digits()), lit.span());
            quote!(::toolsmith::__private::Bound::Float(#sign #digits))
        }
    }
}

/// The typed checks of one parameter, in the order of `constraints`; each records what it
/// finds broken. Each names the trait as `<T as Trait>`, spanned like the constraint's schema
/// entry, so a type the key does not apply to is reported once, on the parameter's type.
fn checks(index: usize, param: &Param) -> Vec<TokenStream> {
    let ident = &param.ident;
    let ty = &param.ty;
    let mut calls: Vec<(TokenStream, usize)> = Vec::new();
    let mut position = 0_usize;
    for (given, trait_, method) in [
        (param.args.length.is_some(), "HasLength", "check_length"),
        (param.args.range.is_some(), "HasRange", "check_range"),
    ] {
        if given {
            let (trait_, method) = (format_ident!("{}", trait_), format_ident!("{}", method));
            calls.push((
                quote!(<#ty as ::toolsmith::__private::#trait_>::#method),
                position,
            ));
            position += 1;
        }
    }
    // The text check reads the parameter's compiled `pattern`/`format`, by parameter index.
    if param.args.pattern.is_some() || param.args.email.is_some() || param.args.url.is_some() {
        calls.push((
            quote!(<#ty as ::toolsmith::__private::HasText>::check_text),
            index,
        ));
    }
    calls
        .into_iter()
        .map(|(path, i)| {
            // A defaulted parameter is an `Option<T>` in the struct; `None` (the default, the
            // tool author's value rather than the model's) is not checked.
            if param.args.default.is_some() {
                quote! {
                    if let ::core::option::Option::Some(__v) = &__a.#ident {
                        #path(__v, &__PARAMS[#index], #i, __f);
                    }
                }
            } else {
                quote!(#path(&__a.#ident, &__PARAMS[#index], #i, __f);)
            }
        })
        .collect()
}

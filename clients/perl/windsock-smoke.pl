#!/usr/bin/env perl
# windsock-smoke.pl: Perl's OpenAPI::Client (Debian: libopenapi-client-perl) against Windsock.
# The client builds its methods from the OpenAPI 3.0.3 rendering of the spec at run time
# (generated/openapi-3.0.json, read from disk: nothing is fetched), one per operationId. This
# script makes the calls a consumer's first program makes and prints what it saw as JSON
# (test/sdk/perl.test.ts runs it against a live Windsock): list pipelines, create a build, page
# through builds by following `Link: rel="next"`, list flaky tests, and the errors of a build the
# client refuses to send and of an unknown pipeline.
#
#   WINDSOCK_URL=http://127.0.0.1:3000 WINDSOCK_TOKEN=... WINDSOCK_ORG=acme \
#   WINDSOCK_PIPELINE=app WINDSOCK_SUITE=unit WINDSOCK_PER_PAGE=2 perl clients/perl/windsock-smoke.pl
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;
use Mojo::File;
use Mojo::JSON qw(decode_json encode_json);
use Mojo::URL;
use OpenAPI::Client;

my %env = map { $_ => $ENV{"WINDSOCK_$_"} // die "WINDSOCK_$_ is not set\n" } qw(URL TOKEN ORG PIPELINE SUITE);
my $per_page = $ENV{WINDSOCK_PER_PAGE} || 30;
my $spec = $ENV{WINDSOCK_SPEC} // File::Spec->catfile(dirname(File::Spec->rel2abs(__FILE__)), '..', '..', 'generated', 'openapi-3.0.json');

# The document is read from disk (nothing is fetched); base_url points the operations at this Windsock.
my $document = decode_json(Mojo::File->new($spec)->slurp);
admit_null_where_nullable($document);
my $client = OpenAPI::Client->new($document, base_url => Mojo::URL->new($env{URL}));
$client->ua->request_timeout(30);
$client->ua->on(start => sub { $_[1]->req->headers->authorization("Bearer $env{TOKEN}") });

my @mismatches;

# The rendering writes a nullable reference as `nullable: true` beside `allOf: [{$ref}]` (or a
# `oneOf`), the form code generators read; JSON::Validator applies `nullable` to `type` only, as
# 3.0.3 words it, so the `$ref` inside still refuses null. Say "null, or that" in its terms.
sub admit_null_where_nullable {
  my ($node) = @_;
  if (ref $node eq 'ARRAY') { admit_null_where_nullable($_) for @$node; return }
  return unless ref $node eq 'HASH';
  admit_null_where_nullable($_) for values %$node;
  my ($combinator) = grep { $node->{$_} } qw(allOf oneOf anyOf);
  return unless $node->{nullable} && $combinator;
  my %rest = %$node;
  delete @rest{qw(nullable description readOnly writeOnly example)};
  %$node = (
    (map { exists $node->{$_} ? ($_ => $node->{$_}) : () } qw(description readOnly writeOnly)),
    anyOf => [{%rest}, {type => $rest{type} // 'object', nullable => Mojo::JSON->true, enum => [undef]}],
  );
}

# One call; dies on any status but the expected one, and notes where an answer body from the server
# is not what the spec describes (OpenAPI::Client checks requests only: answers are checked here with
# the same validator; not their headers, as JSON::Validator 5.14 cannot follow a response header's
# `$ref` to `#/components/headers`), then returns the transaction.
sub call {
  my ($operation, $params, $expected, %body) = @_;
  my $tx = $client->$operation($params, %body);
  my $code = $tx->res->code // 0;
  die sprintf("%s: expected %d, got %d %s\n", $operation, $expected, $code, $tx->res->body) unless $code == $expected;
  return $tx if $tx->req->url->to_abs eq '' || !$tx->remote_address;    # answered by the client itself
  my $route = $client->validator->routes->first(sub { $_->{operation_id} eq $operation });
  my @errors = $client->validator->validate_response([@$route{qw(method path)}, $code], {
    body => sub { {exists => 1, value => $tx->res->json} },
    header => sub { {exists => 0} },
  });
  push @mismatches, map {; "$operation $code: $_" } @errors;
  return $tx;
}

# Reads every page of a list operation: each next page's parameters are the query of the answer's
# `Link: rel="next"` (OpenAPI::Client calls operations by parameters, not by URL).
sub pages {
  my ($operation, $params) = @_;
  my @pages;
  while ($params) {
    my $tx = call($operation, $params, 200);
    push @pages, $tx->res->json;
    my $next = $tx->res->headers->links->{next};
    $params = $next && { %$params, %{ Mojo::URL->new($next->{link})->query->to_hash } };
  }
  return @pages;
}

my %out;
my @path = (org_slug => $env{ORG});
$out{pipelines} = [map { map { $_->{slug} } @$_ } pages(listPipelines => {@path, per_page => $per_page})];

my $build = call(createBuild => {@path, pipeline_slug => $env{PIPELINE}}, 201, json => {
  commit => 'HEAD', branch => 'main', message => 'Built by the Perl client', env => {FROM => 'perl'}, meta_data => {client => 'perl'},
})->res->json;
$out{created} = {map { $_ => $build->{$_} } qw(number state branch commit message env meta_data url)};

$out{pages} = [map { [map { $_->{number} } @$_] } pages(listPipelineBuilds => {@path, pipeline_slug => $env{PIPELINE}, branch => 'main', per_page => $per_page})];

$out{flaky} = [map { map { {name => $_->{name}, instances => $_->{instances}} } @$_ } pages(listFlakyTests => {@path, suite_slug => $env{SUITE}})];

# The client validates a request against the spec before sending it: a build without a branch is
# answered by the client itself, with the spec's reason.
my $invalid = call(createBuild => {@path, pipeline_slug => $env{PIPELINE}}, 400, json => {commit => 'HEAD'})->res->json;
$out{validation} = {status => 400, errors => [map { $_->{path} } @{ $invalid->{errors} }]};

# The server's answer for a pipeline it does not know: its JSON `message`.
my $missing = call(createBuild => {@path, pipeline_slug => "$env{PIPELINE}-missing"}, 404, json => {commit => 'HEAD', branch => 'main'});
$out{not_found} = {status => 0 + $missing->res->code, message => $missing->res->json->{message}};

$out{spec_mismatches} = \@mismatches;
print encode_json(\%out), "\n";

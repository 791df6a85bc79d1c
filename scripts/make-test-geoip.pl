#!/usr/bin/perl
# make-test-geoip.pl OUTPUT.mmdb
#
# Writes a tiny GeoLite2-City compatible MaxMind DB that covers only the
# documentation address ranges (RFC 5737), so that Umami can geolocate test
# traffic without the real (downloaded) GeoLite2 database:
#
#   203.0.113.0/24  (TEST-NET-3) -> US / US-CA / San Francisco
#   198.51.100.0/24 (TEST-NET-2) -> DE / DE-BE / Berlin
#   192.0.2.0/24    (TEST-NET-1) -> JP / JP-13 / Tokyo
#
# Any other public address is simply "not found" (Umami stores no location).
# Needs Debian's libmaxmind-db-writer-perl.
use strict;
use warnings;
use MaxMind::DB::Writer::Tree;

my $out = shift @ARGV or die "usage: $0 OUTPUT.mmdb\n";

my %types = (
    city          => 'map',
    continent     => 'map',
    country       => 'map',
    registered_country => 'map',
    subdivisions  => [ 'array', 'map' ],
    location      => 'map',
    names         => 'map',
    en            => 'utf8_string',
    code          => 'utf8_string',
    iso_code      => 'utf8_string',
    geoname_id    => 'uint32',
    latitude      => 'double',
    longitude     => 'double',
    time_zone     => 'utf8_string',
    accuracy_radius => 'uint16',
);

sub record {
    my (%a) = @_;
    return {
        city      => { geoname_id => $a{city_id}, names => { en => $a{city} } },
        continent => { code => $a{continent}, names => { en => $a{continent_name} } },
        country   => { iso_code => $a{country}, names => { en => $a{country_name} } },
        registered_country => { iso_code => $a{country}, names => { en => $a{country_name} } },
        subdivisions => [ { iso_code => $a{sub}, names => { en => $a{sub_name} } } ],
        location  => {
            latitude => $a{lat}, longitude => $a{lon},
            time_zone => $a{tz}, accuracy_radius => 10,
        },
    };
}

my $tree = MaxMind::DB::Writer::Tree->new(
    ip_version            => 6,
    record_size           => 28,
    database_type         => 'GeoLite2-City',
    languages             => ['en'],
    description           => { en => 'Test GeoLite2-City (documentation ranges only)' },
    # the documentation ranges are "reserved": keep them
    remove_reserved_networks => 0,
    map_key_type_callback => sub { $types{ $_[0] } },
);

$tree->insert_network('203.0.113.0/24', record(
    city => 'San Francisco', city_id => 5391959, continent => 'NA',
    continent_name => 'North America', country => 'US',
    country_name => 'United States', sub => 'CA', sub_name => 'California',
    lat => 37.7749, lon => -122.4194, tz => 'America/Los_Angeles'));
$tree->insert_network('198.51.100.0/24', record(
    city => 'Berlin', city_id => 2950159, continent => 'EU',
    continent_name => 'Europe', country => 'DE', country_name => 'Germany',
    sub => 'BE', sub_name => 'Land Berlin',
    lat => 52.5244, lon => 13.4105, tz => 'Europe/Berlin'));
$tree->insert_network('192.0.2.0/24', record(
    city => 'Tokyo', city_id => 1850147, continent => 'AS',
    continent_name => 'Asia', country => 'JP', country_name => 'Japan',
    sub => '13', sub_name => 'Tokyo',
    lat => 35.6895, lon => 139.6917, tz => 'Asia/Tokyo'));

my $tmp = "$out.tmp.$$";
open my $fh, '>:raw', $tmp or die "cannot write $tmp: $!\n";
$tree->write_tree($fh);
close $fh or die "cannot close $tmp: $!\n";
rename $tmp, $out or die "cannot rename $tmp to $out: $!\n";
print "wrote $out\n";
